// A client of a running cluster, built outside taskwire (CMake and pkg-config): runs
// consumer::add(square(6), 6) on a worker that --preload's libconsumer_tasks.so.
// usage: consumer_client SCHEDULER_FILE [--shutdown]
#include "consumer_tasks.hpp"

#include <taskwire/taskwire.hpp>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: consumer_client SCHEDULER_FILE [--shutdown]\n");
    return 2;
  }
  try {
    auto client = taskwire::Client::from_scheduler_file(argv[1]);
    auto squared = client.submit(consumer::square, 6L);
    long total = client.submit(consumer::add, squared, 6L).get();
    std::printf("consumer_client: add(square(6), 6) = %ld\n", total);
    if (argc > 2 && std::string(argv[2]) == "--shutdown") client.shutdown();
    return total == 42 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_client: %s\n", e.what());
    return 1;
  }
}
