// A worker's spill directory is locked while it lives; the next worker on the same
// --local-directory removes those whose lock nobody holds (their workers died).
#include <taskwire/worker/spill_directory.hpp>

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace taskwire::worker;
namespace fs = std::filesystem;

namespace {

struct Parent {
  fs::path path;
  Parent() {
    std::string pattern = (fs::temp_directory_path() / "taskwire-local-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~Parent() { fs::remove_all(path); }
  // What a SIGKILLed worker leaves: its directory, its lock file (unlocked now), its files.
  fs::path left_by_dead_worker(const std::string& suffix, bool with_lock = true) const {
    const auto dir = path / ("taskwire-worker-" + suffix);
    fs::create_directories(dir);
    if (with_lock) std::ofstream(dir / ".lock") << "";
    std::ofstream(dir / "spill-0") << std::string(1000, 'x');
    return dir;
  }
};

}  // namespace

TEST_CASE("spill directory: a new worker removes what dead workers left, never a live one's",
          "[worker][spill]") {
  Parent parent;
  const auto dead1 = parent.left_by_dead_worker("dead01");
  const auto dead2 = parent.left_by_dead_worker("dead02");
  const auto unlocked = parent.left_by_dead_worker("making", false);  // may be being made now
  const auto other = parent.path / "not-ours";
  fs::create_directories(other);

  auto live = SpillDirectory::make(parent.path);
  REQUIRE(fs::is_directory(live.path()));
  CHECK(live.path().parent_path() == parent.path);
  CHECK_FALSE(fs::exists(dead1));
  CHECK_FALSE(fs::exists(dead2));
  CHECK(fs::exists(unlocked));
  CHECK(fs::exists(other));

  std::ofstream(live.path() / "spill-0") << "held";
  auto second = SpillDirectory::make(parent.path);  // the first one's lock is held
  CHECK(fs::exists(live.path() / "spill-0"));
  CHECK(second.path() != live.path());

  // Dropped without remove(): as a killed worker's, its lock goes with it.
  const auto abandoned = live.path();
  { SpillDirectory gone = std::move(live); }
  CHECK(fs::exists(abandoned));
  CHECK(SpillDirectory::remove_abandoned(parent.path) == 1);
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(second.path()));
  second.remove();
  CHECK_FALSE(fs::exists(second.path()));
}
