// The daemons' shared set-up (launch/daemon_bootstrap.hpp) and the scheduler file's wait.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/launch/daemon_bootstrap.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <unistd.h>

using namespace taskwire;
using namespace std::chrono_literals;
using Catch::Contains;

TEST_CASE("daemon bootstrap: --connect-timeout takes durations or none", "[runtime][daemon]") {
  CHECK(launch::parse_timeout("30", "--connect-timeout") == 30s);
  CHECK(launch::parse_timeout("30s", "--connect-timeout") == 30s);
  CHECK(launch::parse_timeout("500ms", "--connect-timeout") == 500ms);
  CHECK(launch::parse_timeout("1.5", "--connect-timeout") == 1500ms);
  CHECK(launch::parse_timeout("2m", "--connect-timeout") == 120s);
  CHECK(launch::parse_timeout("1h", "--connect-timeout") == 3600s);
  CHECK_FALSE(launch::parse_timeout("none", "--connect-timeout").has_value());
  for (const char* bad : {"", "0", "-1", "soon", "5 s", "3d", "inf", "nan", "1e300"}) {
    INFO(bad);
    CHECK_THROWS_WITH(launch::parse_timeout(bad, "--connect-timeout"),
                      Contains("--connect-timeout '") && Contains("or none"));
  }
}

namespace {
struct TempDir {
  TempDir() {
    char dir[] = "/tmp/taskwire-bootstrap-test-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    path = dir;
  }
  ~TempDir() {
    std::remove((path + "/s.json").c_str());
    ::rmdir(path.c_str());
  }
  std::string path;
};
}  // namespace

TEST_CASE("scheduler file: a wait for one that never comes ends at the timeout, naming it",
          "[runtime][daemon]") {
  TempDir dir;
  const auto file = dir.path + "/s.json";
  CHECK_THROWS_WITH(runtime::SchedulerFile::wait_and_read(file, 200ms),
                    Contains("no scheduler file '" + file + "'") &&
                        Contains("--scheduler-file " + file));
  CHECK_FALSE(runtime::SchedulerFile::wait_and_read(file, std::nullopt, [] { return true; }));
}

TEST_CASE("scheduler file: one that exists is read at once, and a malformed one is an error at once",
          "[runtime][daemon]") {
  TempDir dir;
  const auto file = dir.path + "/s.json";
  runtime::SchedulerFile{{"tcp://127.0.0.1:8786", "mpi://0"}}.write(file);
  auto read = runtime::SchedulerFile::wait_and_read(file, std::nullopt);
  REQUIRE(read);
  CHECK(read->address_for("mpi") == "mpi://0");
  CHECK(read->dashboard.empty());
  runtime::SchedulerFile{{"tcp://127.0.0.1:8786"}, "http://127.0.0.1:41234"}.write(file);
  CHECK(runtime::SchedulerFile::read(file).dashboard == "http://127.0.0.1:41234");
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs("{\"addresses\": [\"tcp://", f);  // cut short
    std::fclose(f);
  }
  CHECK_THROWS_WITH(runtime::SchedulerFile::read(file), Contains("is not JSON"));
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs("{}", f);
    std::fclose(f);
  }
  CHECK_THROWS_WITH(runtime::SchedulerFile::wait_and_read(file, std::nullopt),
                    Contains("no \"addresses\" entry"));
}

TEST_CASE("daemon bootstrap: what a failed wait for the scheduler advises", "[runtime][daemon]") {
  launch::SchedulerWait bounded{"tcp://127.0.0.1:1", "", 2s, "2s"};
  CHECK_THAT(bounded.advice(comm::errc::refused),
             Contains("start the scheduler first") && Contains("--connect-timeout 2s"));
  CHECK(bounded.advice(comm::errc::wrong_role).empty());  // waiting would not mend it
  CHECK(bounded.left() <= 2s);
  launch::SchedulerWait unbounded{"tcp://127.0.0.1:1", "", std::nullopt, "none"};
  CHECK(unbounded.left() == comm::kNoTimeout);
}
