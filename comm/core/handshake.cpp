#include <taskwire/comm/core/handshake.hpp>

#include <taskwire/runtime/raw_codec.hpp>

#include <boost/archive/basic_archive.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <optional>

namespace taskwire::comm {
namespace {

constexpr char kHelloMagic[4] = {'T', 'W', 'H', 'S'};
constexpr char kAccept[4] = {'T', 'W', 'O', 'K'};
constexpr char kRefuse[4] = {'T', 'W', 'N', 'O'};
constexpr std::size_t kMaxField = 1024;

// Every wrong-role refusal says "..., not a ROLE: give the ROLE's address".
constexpr std::string_view kWrongRoleMark = "'s address";

std::string with_article(const std::string& role) {
  if (role.empty()) return "a process that announces no role";
  const bool vowel = std::string_view("aeiou").find(role.front()) != std::string_view::npos;
  return fmt::format("{} {}", vowel ? "an" : "a", role);
}

std::uint32_t serialization_version() {
  return static_cast<std::uint32_t>(boost::archive::BOOST_ARCHIVE_VERSION());
}

struct Hello {
  std::uint32_t protocol = 0;
  std::uint32_t serialization = 0;
  std::string name, role, token;
};

class Writer {
 public:
  void bytes(const void* p, std::size_t n) {
    auto c = static_cast<const char*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  void u32(std::uint32_t v) { runtime::raw_codec::append_le(out_, v); }
  void str(const std::string& s) {
    const auto n = static_cast<std::uint32_t>(std::min(s.size(), kMaxField));
    u32(n);
    bytes(s.data(), n);
  }
  Frame frame() { return Frame(std::move(out_)); }

 private:
  std::vector<char> out_;
};

class Reader {
 public:
  explicit Reader(const Frame& f) : p_(f.data()), end_(f.data() + f.size()) {}
  bool bytes(void* out, std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) return false;
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (static_cast<std::size_t>(end_ - p_) < sizeof v) return false;
    v = runtime::raw_codec::load_le<std::uint32_t>(p_);
    p_ += sizeof v;
    return true;
  }
  bool str(std::string& s) {
    std::uint32_t n;
    if (!u32(n) || n > kMaxField || static_cast<std::size_t>(end_ - p_) < n) return false;
    s.assign(p_, n);
    p_ += n;
    return true;
  }
  std::string rest() const { return std::string(p_, end_); }

 private:
  const char* p_;
  const char* end_;
};

Message encode_hello(const HandshakeOptions& o) {
  Writer w;
  w.bytes(kHelloMagic, 4);
  w.u32(o.protocol_version);
  w.u32(serialization_version());
  w.str(o.name);
  w.str(o.role);
  w.str(o.auth_token);
  return Message({w.frame()});
}

std::optional<Hello> decode_hello(const Message& m) {
  if (m.frames.size() != 1) return std::nullopt;
  Reader r(m.frames[0]);
  char magic[4];
  Hello h;
  if (!r.bytes(magic, 4) || std::memcmp(magic, kHelloMagic, 4) != 0) return std::nullopt;
  if (!r.u32(h.protocol) || !r.u32(h.serialization) || !r.str(h.name) || !r.str(h.role) ||
      !r.str(h.token))
    return std::nullopt;
  return h;
}

Message encode_verdict(bool ok, const std::string& reason) {
  Writer w;
  w.bytes(ok ? kAccept : kRefuse, 4);
  w.bytes(reason.data(), std::min(reason.size(), kMaxField));
  return Message({w.frame()});
}

// State of one handshake; lives while an operation on the comm or the timer holds it.
struct HandshakeOp : std::enable_shared_from_this<HandshakeOp> {
  CommPtr comm;
  HandshakeOptions options;
  HandshakeHandler handler;
  asio::steady_timer timer;
  std::atomic<bool> timed_out{false};
  error_code my_error;
  std::string my_reason;
  bool done = false;

  HandshakeOp(CommPtr c, HandshakeOptions o, HandshakeHandler h)
      : comm(std::move(c)), options(std::move(o)), handler(std::move(h)),
        timer(comm->executor()) {}

  void start() {
    auto self = shared_from_this();
    timer.expires_after(options.timeout);
    timer.async_wait([self](error_code ec) {
      if (ec || self->done) return;
      self->timed_out = true;
      self->comm->abort();
    });
    comm->async_write(encode_hello(options), [self](error_code ec) {
      if (ec) self->finish(ec, "could not send the handshake");
    });
    comm->async_read([self](error_code ec, Message m) { self->on_hello(ec, std::move(m)); });
  }

  void on_hello(error_code ec, Message m) {
    if (ec) return finish(ec, "no handshake from the peer");
    auto hello = decode_hello(m);
    if (!hello) {
      my_error = make_error_code(errc::protocol);
      my_reason = "the peer's first message is not a taskwire handshake";
      return finish(my_error, my_reason);  // it cannot parse a verdict either
    }
    if (hello->protocol != options.protocol_version) {
      my_error = make_error_code(errc::version);
      my_reason = fmt::format("protocol version mismatch: peer '{}' speaks taskwire protocol v{}, "
                              "this process speaks v{}; run the same taskwire version everywhere",
                              hello->name, hello->protocol, options.protocol_version);
    } else if (hello->serialization != serialization_version()) {
      my_error = make_error_code(errc::version);
      my_reason = fmt::format("serialization version mismatch: peer '{}' uses Boost archive v{}, "
                              "this process v{}; build all processes against the same Boost",
                              hello->name, hello->serialization, serialization_version());
    } else if (!options.expect_role.empty() && hello->role != options.expect_role) {
      my_error = make_error_code(errc::wrong_role);
      my_reason = fmt::format("{} is {}, not {}: give the {}'s address", comm->peer_address(),
                              with_article(hello->role), with_article(options.expect_role),
                              options.expect_role);
    } else if (!options.auth_token.empty() && hello->token != options.auth_token) {
      my_error = make_error_code(errc::auth);
      my_reason = fmt::format("peer '{}' ({}) presented {}; set the same TASKWIRE_AUTH_TOKEN / "
                              "--auth-token on every process",
                              hello->name, comm->peer_address(),
                              hello->token.empty() ? "no auth token" : "a wrong auth token");
    }
    comm->set_peer(PeerInfo{hello->name, hello->role, hello->protocol});
    auto self = shared_from_this();
    comm->async_write(encode_verdict(!my_error, my_reason), [](error_code) {});
    comm->async_read([self](error_code ec, Message m) { self->on_verdict(ec, std::move(m)); });
  }

  void on_verdict(error_code ec, Message m) {
    if (my_error) return finish(my_error, my_reason);
    if (ec) return finish(ec, "the peer closed the comm during the handshake");
    if (m.frames.size() != 1 || m.frames[0].size() < 4)
      return finish(make_error_code(errc::protocol), "malformed handshake verdict");
    const Frame& f = m.frames[0];
    if (std::memcmp(f.data(), kAccept, 4) == 0) return finish({}, {});
    if (std::memcmp(f.data(), kRefuse, 4) != 0)
      return finish(make_error_code(errc::protocol), "malformed handshake verdict");
    std::string reason(f.data() + 4, f.size() - 4);
    // The peer says why; classify by its words' subject so both sides agree on the code.
    auto code = reason.find("auth token") != std::string::npos ? errc::auth
                : reason.find("version") != std::string::npos  ? errc::version
                : reason.find(kWrongRoleMark) != std::string::npos ? errc::wrong_role
                                                                   : errc::refused;
    finish(make_error_code(code), "refused by the peer: " + reason);
  }

  void finish(error_code ec, std::string detail) {
    if (done) return;
    done = true;
    timer.cancel();
    if (timed_out) {
      ec = make_error_code(errc::timeout);
      detail = fmt::format("handshake with {} did not finish within {} ms", comm->peer_address(),
                           options.timeout.count());
    }
    if (ec) {
      if (my_error) comm->close();  // lets the refusal verdict reach the peer first
      else comm->abort();
    }
    auto h = std::move(handler);
    h(ec, std::move(detail));
  }
};

}  // namespace

HandshakeOptions HandshakeOptions::from(const runtime::Config& c) {
  HandshakeOptions o;
  o.name = c.name;
  o.role = c.role;
  o.auth_token = c.auth_token;
  if (c.protocol_version_override) o.protocol_version = c.protocol_version_override;
  o.timeout = c.handshake_timeout;
  return o;
}

void async_handshake(const CommPtr& comm, const HandshakeOptions& options,
                     HandshakeHandler handler) {
  std::make_shared<HandshakeOp>(comm, options, std::move(handler))->start();
}

}  // namespace taskwire::comm
