#pragma once
// The comm layer's one error vocabulary, usable as boost::system::error_code. Backends
// translate transport errors (errno, MPI error classes) into these at their edge, keeping the
// original text in the log. A task's failure is data, never one of these.
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <type_traits>

namespace taskwire::comm {

enum class errc {
  closed = 1,      ///< the peer closed the comm (or it was closed locally)
  aborted,         ///< abort() was called on this comm
  timeout,         ///< a deadline passed (connect, handshake)
  refused,         ///< nothing listens at the address
  protocol,        ///< malformed or oversized frame, bad magic: the peer is not speaking taskwire
  version,         ///< handshake: protocol or serialization version mismatch
  auth,            ///< handshake: wrong or missing auth token
  unknown_scheme,  ///< no backend registered for the address's scheme
  bad_address,     ///< the address does not parse
  peer_lost,       ///< the peer process died or became unreachable
  io,              ///< any other transport failure (text in the log)
  unknown_host,    ///< the host name does not exist (DNS says so): a typo, or the wrong name
  dns_unavailable, ///< the host name could not be looked up now (DNS unreachable): retried
  wrong_role,      ///< handshake: the peer is not the kind of process expected (a worker's
                   ///< address given where the scheduler's is wanted)
  tls,             ///< TLS: a handshake or certificate failure, or a bad TLS configuration
                   ///< (comm/tls/tls_error.hpp's codes, whose condition this is, say which)
};

const boost::system::error_category& comm_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), comm_category()};
}

/// Fatal errors are not retried by connect(): retrying cannot change their outcome. A code
/// of another category counts by its default_error_condition (a tls code is errc::tls's).
bool is_fatal(const boost::system::error_code& ec) noexcept;

/// Exception thrown by the blocking API: the code plus a sentence saying what happened.
/// what() is that sentence alone (the code's own message when it is empty): details built
/// by the comm layer already say what the code says, and printing both repeated it.
class CommError : public boost::system::system_error {
 public:
  CommError(boost::system::error_code ec, const std::string& what)
      : boost::system::system_error(ec), what_(what.empty() ? ec.message() : what) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace taskwire::comm

template <>
struct boost::system::is_error_code_enum<taskwire::comm::errc> : std::true_type {};
