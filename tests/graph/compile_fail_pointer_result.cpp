// Must not compile: graph::map over a function returning a pointer (see tests/graph/CMakeLists).
#include <taskwire/graph/graph.hpp>

int* address_of(int x);

void build() { (void)taskwire::graph::map(address_of, std::vector<int>{1}); }
