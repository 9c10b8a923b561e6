#pragma once
// Certificates for the tls backend of taskwire-bench. With TASKWIRE_TLS_CERT set the user's
// files are used as they are. Otherwise a throwaway self-signed certificate for 127.0.0.1
// (EC P-256, its own CA, so both ends verify each other: mutual TLS) is made with the
// `openssl` command in /tmp/taskwire-bench-tls-KEY and TASKWIRE_TLS_CA_FILE, TASKWIRE_TLS_CERT
// and TASKWIRE_TLS_KEY are set to it, before any Config::from_env(). Processes passing the
// same key share one set: the first makes it (mkdir is the lock), the others wait for it.
#include <string>

namespace taskwire::bench {

class BenchTlsFiles {
 public:
  /// Throws std::runtime_error when the files cannot be made.
  explicit BenchTlsFiles(const std::string& key);
  ~BenchTlsFiles();  ///< removes the files it made
  BenchTlsFiles(const BenchTlsFiles&) = delete;
  BenchTlsFiles& operator=(const BenchTlsFiles&) = delete;

 private:
  std::string dir_;  // empty: the user's files, or made by another process
};

}  // namespace taskwire::bench
