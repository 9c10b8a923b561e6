// runtime/force_exit: the teardown watchdog. Each scenario runs in a child process (a hidden
// test case of this executable) because the watchdog ends the process it runs in.
#include "tests/graph/child_process.hpp"

#include <taskwire/runtime/force_exit.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <thread>

using namespace std::chrono_literals;
using taskwire::test::run_self;

TEST_CASE("force_exit child: armed then hangs", "[.child]") {
  std::fprintf(stderr, "child armed\n");
  taskwire::force_exit_after(0.2, "note-hang-42");
  std::this_thread::sleep_for(60s);
}

TEST_CASE("force_exit child: re-armed shorter then hangs", "[.child]") {
  taskwire::force_exit_after(60, "first-long-note");
  taskwire::force_exit_after(0.2, "second-short-note");
  std::this_thread::sleep_for(60s);
}

TEST_CASE("force_exit child: re-armed longer then cancelled", "[.child]") {
  taskwire::force_exit_after(1.0, "short-note");
  taskwire::force_exit_after(60, "long-note");
  std::this_thread::sleep_for(2500ms);  // past the first deadline
  taskwire::force_exit_after(0, "");
  std::fprintf(stderr, "child survived\n");
}

TEST_CASE("force_exit child: armed then cancelled", "[.child]") {
  taskwire::force_exit_after(1.0, "cancelled-note");
  taskwire::force_exit_after(0, "");
  std::this_thread::sleep_for(2500ms);
  std::fprintf(stderr, "child survived\n");
}

TEST_CASE("force_exit: a hang after arming ends the process with status 124, naming the note",
          "[force_exit]") {
  auto r = run_self({"force_exit child: armed then hangs"}, 30s);
  INFO(r.output);
  REQUIRE_FALSE(r.killed);
  REQUIRE(r.exited);
  CHECK(r.status == taskwire::kForceExitCode);
  CHECK(r.output.find("forcing exit") != std::string::npos);
  CHECK(r.output.find("child armed") != std::string::npos);
  CHECK(r.output.find("note-hang-42") != std::string::npos);
}

TEST_CASE("force_exit: re-arming replaces the deadline and the note", "[force_exit]") {
  auto shorter = run_self({"force_exit child: re-armed shorter then hangs"}, 30s);
  INFO(shorter.output);
  REQUIRE(shorter.exited);
  CHECK(shorter.status == taskwire::kForceExitCode);
  CHECK(shorter.output.find("second-short-note") != std::string::npos);
  CHECK(shorter.output.find("first-long-note") == std::string::npos);

  auto longer = run_self({"force_exit child: re-armed longer then cancelled"}, 30s);
  INFO(longer.output);
  REQUIRE(longer.exited);
  CHECK(longer.status == 0);
  CHECK(longer.output.find("child survived") != std::string::npos);
  CHECK(longer.output.find("forcing exit") == std::string::npos);
}

TEST_CASE("force_exit: 0 cancels", "[force_exit]") {
  auto r = run_self({"force_exit child: armed then cancelled"}, 30s);
  INFO(r.output);
  REQUIRE(r.exited);
  CHECK(r.status == 0);
  CHECK(r.output.find("child survived") != std::string::npos);
  CHECK(r.output.find("forcing exit") == std::string::npos);
}
