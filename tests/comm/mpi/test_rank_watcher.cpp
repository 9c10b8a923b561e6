// comm::mpi::rank_end_line (rank_watcher.hpp): what a rank's watcher says when the rank's
// process ended, from hand-made wait statuses; and that a process outside Hydra is not forked.
#include <taskwire/comm/mpi/rank_watcher.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <string>

namespace {

using taskwire::comm::mpi::RankEnd;
using taskwire::comm::mpi::RankStage;

constexpr int killed_by(int signo) { return signo; }  // waitpid's status of a signal death
constexpr int exited_with(int code) { return code << 8; }

RankEnd worker_2(RankStage stage, int status) {
  RankEnd end;
  end.rank = 2;
  end.role = "worker";
  end.host = "vm";
  end.pid = 4242;
  end.watcher_pid = 4241;
  end.stage = stage;
  end.status = status;
  return end;
}

}  // namespace

TEST_CASE("rank watcher: a rank killed in the job is named with its pid and signal", "[mpi][watcher]") {
  const auto line = taskwire::comm::mpi::rank_end_line(worker_2(RankStage::in_job, killed_by(SIGKILL)));
  REQUIRE(line);
  CHECK(*line ==
        "taskwire: rank 2 (worker on host vm) died without shutting down: pid 4242 was killed "
        "by SIGKILL (Killed); an MPI job cannot go on without it, so the job ends (mpiexec "
        "knows the rank as pid 4241, its watcher)");
}

TEST_CASE("rank watcher: an exit in the job is named, one after leaving in order is not", "[mpi][watcher]") {
  using taskwire::comm::mpi::rank_end_line;
  const auto quit = rank_end_line(worker_2(RankStage::in_job, exited_with(0)));
  REQUIRE(quit);
  CHECK(quit->find("died without shutting down: pid 4242 exited with status 0;") != std::string::npos);
  CHECK_FALSE(rank_end_line(worker_2(RankStage::left, exited_with(5))));
  CHECK_FALSE(rank_end_line(worker_2(RankStage::ending_job, exited_with(1))));
  const auto crash = rank_end_line(worker_2(RankStage::left, killed_by(SIGSEGV)));
  REQUIRE(crash);
  CHECK(crash->find("died after leaving the job in order: pid 4242 was killed by SIGSEGV") !=
        std::string::npos);
  const auto startup = rank_end_line(worker_2(RankStage::starting, killed_by(SIGKILL)));
  REQUIRE(startup);
  CHECK(startup->find("died in MPI start-up: pid 4242 was killed by SIGKILL") != std::string::npos);
}

TEST_CASE("rank watcher: a death in start-up by the signal it passed on is the rank's own to report", "[mpi][watcher]") {
  auto end = worker_2(RankStage::starting, killed_by(SIGTERM));
  end.forwarded = SIGTERM;
  CHECK_FALSE(taskwire::comm::mpi::rank_end_line(end));
  end.forwarded = SIGINT;  // passed one on, died of another
  CHECK(taskwire::comm::mpi::rank_end_line(end));
  // In the job such a signal is caught; a rank that died of it anyway is named.
  end = worker_2(RankStage::in_job, killed_by(SIGTERM));
  end.forwarded = SIGTERM;
  CHECK(taskwire::comm::mpi::rank_end_line(end));
}

TEST_CASE("rank watcher: no fork outside Hydra", "[mpi][watcher]") {
  ::unsetenv("PMI_FD");
  ::unsetenv("HYDI_CONTROL_FD");
  CHECK(taskwire::comm::mpi::start_rank_watcher(0, nullptr, "worker") ==
        taskwire::comm::mpi::RankWatcherStart::not_under_hydra);
  CHECK(taskwire::comm::mpi::rank_watcher_pid() == 0);
}
