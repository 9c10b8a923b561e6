#include <taskwire/comm/core/error.hpp>

namespace taskwire::comm {
namespace {

class CommCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "taskwire.comm"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::closed: return "comm closed";
      case errc::aborted: return "comm aborted";
      case errc::timeout: return "timed out";
      case errc::refused: return "connection refused (nothing listens there)";
      case errc::protocol: return "protocol error (malformed or oversized message)";
      case errc::version: return "protocol version mismatch";
      case errc::auth: return "authentication failed (auth token mismatch)";
      case errc::unknown_scheme: return "unknown address scheme";
      case errc::bad_address: return "malformed address";
      case errc::peer_lost: return "peer lost";
      case errc::io: return "transport I/O error";
      case errc::unknown_host: return "no such host name: check the spelling, or give an IP address";
      case errc::dns_unavailable: return "the host name lookup failed (is DNS reachable?)";
      case errc::wrong_role: return "the peer is not the kind of process expected";
      case errc::tls: return "TLS failed (handshake, certificate or configuration)";
    }
    return "unknown comm error";
  }
};

}  // namespace

const boost::system::error_category& comm_category() noexcept {
  static const CommCategory category;
  return category;
}

bool is_fatal(const boost::system::error_code& ec) noexcept {
  int value = ec.value();
  if (ec.category() != comm_category()) {
    const auto condition = ec.default_error_condition();
    if (condition.category() != comm_category()) return false;
    value = condition.value();
  }
  switch (static_cast<errc>(value)) {
    case errc::version:
    case errc::auth:
    case errc::unknown_scheme:
    case errc::bad_address:
    case errc::protocol:
    case errc::unknown_host:
    case errc::wrong_role:
    case errc::tls:
      return true;
    default:
      return false;
  }
}

}  // namespace taskwire::comm
