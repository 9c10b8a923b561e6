// Must not compile: std::unordered_map scattered without <boost/serialization/unordered_map.hpp>.
// The compile-fail test (expect_compile_error.cmake) checks that the one error names the header.
#include <taskwire/client/client.hpp>

#include <unordered_map>

void scatter_it(taskwire::Client& client) { client.scatter(std::unordered_map<int, int>{{1, 2}}); }
