// Must not compile: a struct without serialize() as a task argument. The compile-fail test
// (expect_compile_error.cmake) checks that the one error names the type and the fix.
#include <taskwire/client/client.hpp>

namespace unsendable {
struct Plain {
  int x = 0;
};
int use(Plain p) { return p.x; }
}  // namespace unsendable

TASKWIRE_REGISTER(unsendable::use);

int submit_it(taskwire::Client& client) { return client.submit(unsendable::use, unsendable::Plain{}).get(); }
