// A program that launches its own cluster under mpiexec, built outside taskwire against the
// installed package: <taskwire/mpi.hpp> (the MPI launch API, which pulls <mpi.h>) must
// compile and link with what find_package(taskwire) gives.
// usage: mpiexec.mpich -n 2 consumer_mpi   (rank 0 the program and the scheduler, rank 1 a worker)
#include "consumer_tasks.hpp"

#include <taskwire/mpi.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  try {
    auto session = taskwire::mpi::initialize_pool(argc, argv);  // rank 1 never returns
    auto& client = session.client();
    long total = client.submit(consumer::add, client.submit(consumer::square, 6L), 6L).get();
    std::printf("consumer_mpi: add(square(6), 6) = %ld on %d worker rank(s)\n", total,
                session.workers());
    return total == 42 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_mpi: %s\n", e.what());
    return 1;
  }
}
