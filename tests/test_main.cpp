// Catch2 main shared by every test binary. Adds `--scheme NAME` (the comm scheme the
// conformance suite runs over) and tears the scheme fixture down before exit, so an MPI
// world is finalised in order rather than from a static destructor.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <taskwire/runtime/log.hpp>

#include <cstdlib>
#include <string>

namespace taskwire::test {
std::string& selected_scheme() {
  static std::string scheme = "inproc";
  return scheme;
}
void (*teardown_hook)() = nullptr;  // set by a fixture that needs orderly teardown
}  // namespace taskwire::test

int main(int argc, char* argv[]) {
  // Quiet by default; TASKWIRE_LOG_LEVEL=debug shows the runtime's log while debugging.
  const char* level = std::getenv("TASKWIRE_LOG_LEVEL");
  taskwire::runtime::init_logging({level ? level : "warn", "", -1});
  Catch::Session session;
  using namespace Catch::clara;
  auto cli = session.cli() | Opt(taskwire::test::selected_scheme(), "scheme")["--scheme"](
                                 "comm scheme for the conformance suite: inproc, tcp or mpi");
  session.cli(cli);
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const int result = session.run();
  if (taskwire::test::teardown_hook) taskwire::test::teardown_hook();
  return result;
}
