#include "bench/tls_files.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace taskwire::bench {
namespace {

constexpr int kWaitSteps = 200;  // 20 s for another process to finish making them
constexpr std::chrono::milliseconds kWaitStep{100};

void make_files(const std::string& dir) {
  const auto command = fmt::format(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
      "-subj '/CN=taskwire-bench 127.0.0.1' -addext subjectAltName=IP:127.0.0.1 "
      "-keyout '{0}/key.pem' -out '{0}/cert.pem' >/dev/null 2>&1 && touch '{0}/ready'",
      dir);
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("taskwire-bench: could not make a throwaway TLS certificate with "
                             "`openssl` (is it installed?); or set TASKWIRE_TLS_CERT, "
                             "TASKWIRE_TLS_KEY and TASKWIRE_TLS_CA_FILE");
}

}  // namespace

BenchTlsFiles::BenchTlsFiles(const std::string& key) {
  if (std::getenv("TASKWIRE_TLS_CERT")) return;
  const std::string dir = "/tmp/taskwire-bench-tls-" + key;
  if (::mkdir(dir.c_str(), 0700) == 0) {
    dir_ = dir;
    make_files(dir);
  } else {
    int step = 0;
    while (!std::filesystem::exists(dir + "/ready") && ++step < kWaitSteps)
      std::this_thread::sleep_for(kWaitStep);
    if (step == kWaitSteps)
      throw std::runtime_error("taskwire-bench: no TLS certificate appeared in " + dir);
  }
  ::setenv("TASKWIRE_TLS_CA_FILE", (dir + "/cert.pem").c_str(), 1);
  ::setenv("TASKWIRE_TLS_CERT", (dir + "/cert.pem").c_str(), 1);
  ::setenv("TASKWIRE_TLS_KEY", (dir + "/key.pem").c_str(), 1);
}

BenchTlsFiles::~BenchTlsFiles() {
  if (dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace taskwire::bench
