#include <taskwire/comm/core/handshake.hpp>

#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/core/handshake_codec.hpp>

#include <boost/archive/basic_archive.hpp>
#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

namespace taskwire::comm {
namespace {

namespace codec = handshake_codec;

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

Message one_frame(std::vector<char> bytes) { return Message({Frame(std::move(bytes))}); }

codec::Bytes bytes_of(const Frame& f) { return {f.data(), f.size()}; }

codec::Side codec_side(HandshakeSide side) {
  return side == HandshakeSide::connecting ? codec::Side::connecting : codec::Side::accepting;
}

// State of one handshake; lives while an operation on the comm or the timer holds it.
struct HandshakeOp : std::enable_shared_from_this<HandshakeOp> {
  using Step = void (HandshakeOp::*)(const Frame&);

  CommPtr comm;
  HandshakeOptions options;
  HandshakeSide side;
  HandshakeHandler handler;
  PeerAuthenticated on_authenticated;
  asio::steady_timer timer;
  std::atomic<bool> timed_out{false};
  codec::Hello mine, peer;
  bool done = false;

  HandshakeOp(CommPtr c, HandshakeOptions o, HandshakeSide s, HandshakeHandler h,
              PeerAuthenticated a)
      : comm(std::move(c)), options(std::move(o)), side(s), handler(std::move(h)),
        on_authenticated(std::move(a)), timer(comm->executor()) {}

  bool has_token() const { return !options.auth_token.empty(); }

  void start() {
    auto self = shared_from_this();
    auto nonce = codec::fresh_nonce();
    if (!nonce)
      return asio::post(comm->executor(), [self] {
        self->finish(make_error_code(errc::io), "no random bytes for the handshake's nonce");
      });
    timer.expires_after(options.timeout);
    timer.async_wait([self](error_code ec) {
      if (ec || self->done) return;
      self->timed_out = true;
      self->comm->abort();
    });
    mine = codec::Hello{options.protocol_version, serialization_version(), options.name,
                        options.role, *nonce, has_token()};
    comm->set_read_limits(kHandshakeLimits);
    comm->async_write(one_frame(codec::encode_hello(mine)), [self](error_code ec) {
      if (ec) self->finish(ec, "could not send the handshake");
    });
    read_next(&HandshakeOp::on_hello, "no handshake from the peer");
  }

  void read_next(Step step, const char* if_lost) {
    comm->async_read([self = shared_from_this(), step, if_lost](error_code ec, Message m) {
      if (ec) return self->finish(ec, self->lost_detail(ec, if_lost));
      if (m.frames.size() != 1)
        return self->finish(make_error_code(errc::protocol), "malformed handshake message");
      try {
        ((*self).*step)(m.frames[0]);
      } catch (const std::exception& e) {  // libcrypto failed: not the peer's doing
        self->finish(make_error_code(errc::io), e.what());
      }
    });
  }

  // Why the read failed. The cause too: a TLS peer that rejected this end's certificate says
  // so only here.
  std::string lost_detail(error_code ec, const char* if_lost) const {
    if (ec != make_error_code(errc::tls))  // not TLS records at a plain comm (framing.hpp)
      return fmt::format("{} ({})", if_lost, ec.message());
    if (side == HandshakeSide::accepting)
      return fmt::format("{} speaks TLS, and this port does not speak TLS: connect to it with "
                         "tcp://, or listen on tls://",
                         comm->peer_address());
    return fmt::format("{} speaks TLS: connect to it with tls://", comm->peer_address());
  }

  void on_hello(const Frame& f) {
    // A listener that cannot speak with this end at all (a tls:// one) refuses first.
    if (codec::kind_of(bytes_of(f)) == codec::Kind::verdict) return refusal_instead(f, "HELLO");
    const auto decoded = codec::decode_hello(bytes_of(f), options.protocol_version);
    if (decoded.status == codec::HelloDecoded::malformed)  // it cannot parse a verdict either
      return finish(make_error_code(errc::protocol),
                    fmt::format("the first message from {} is not a taskwire handshake",
                                comm->peer_address()));
    if (decoded.status == codec::HelloDecoded::other_version)
      return refuse(errc::version,
                    fmt::format("protocol version mismatch: the peer at {} speaks taskwire "
                                "protocol v{}, this process speaks v{}; run the same taskwire "
                                "version everywhere",
                                comm->peer_address(), decoded.hello.protocol,
                                options.protocol_version));
    peer = decoded.hello;
    if (peer.serialization != serialization_version())
      return refuse(errc::version,
                    fmt::format("serialization version mismatch: peer '{}' uses Boost archive "
                                "v{}, this process v{}; build all processes against the same "
                                "Boost",
                                peer.name, peer.serialization, serialization_version()));
    if (!options.expect_role.empty() && peer.role != options.expect_role)
      return refuse(errc::wrong_role,
                    fmt::format("{} is {}, not {}: give the {}'s address", comm->peer_address(),
                                with_article(peer.role), with_article(options.expect_role),
                                options.expect_role));
    if (peer.nonce == mine.nonce)  // our own HELLO reflected back
      return refuse(errc::auth, fmt::format("the peer at {} sent this process's own nonce back "
                                            "(a reflected handshake, not a peer with a token)",
                                            comm->peer_address()));
    comm->set_peer(PeerInfo{peer.name, peer.role, peer.protocol});
    if (side == HandshakeSide::connecting) send_proof();  // the accepting side waits for it
    read_next(&HandshakeOp::on_peer_proof, "the peer closed the comm during the handshake");
  }

  void send_proof() {
    codec::Proof proof;
    if (has_token())
      proof.mac = codec::compute_proof({options.auth_token, options.protocol_version,
                                        codec_side(side), options.role, peer.role, mine.nonce,
                                        peer.nonce});
    comm->async_write(one_frame(codec::encode_proof(proof)), [](error_code) {});
  }

  // The refusal sentence for the peer's proof, or empty when it passes (or this end has no
  // token, so accepts any peer).
  std::string check_proof(const codec::Proof& proof) const {
    if (!has_token()) return {};
    const char* what = nullptr;
    if (!peer.has_token || !proof.mac) {
      what = "no auth token";
    } else {
      const auto peer_side = side == HandshakeSide::connecting ? HandshakeSide::accepting
                                                               : HandshakeSide::connecting;
      const auto expected = codec::compute_proof({options.auth_token, options.protocol_version,
                                                  codec_side(peer_side), peer.role,
                                                  options.role, peer.nonce, mine.nonce});
      if (!codec::same_mac(expected, *proof.mac)) what = "a wrong auth token";
    }
    if (!what) return {};
    return fmt::format("peer '{}' ({}) presented {}; set the same TASKWIRE_AUTH_TOKEN / "
                       "--auth-token on every process",
                       peer.name, comm->peer_address(), what);
  }

  void on_peer_proof(const Frame& f) {
    if (codec::kind_of(bytes_of(f)) == codec::Kind::verdict) return refusal_instead(f, "proof");
    const auto proof = codec::decode_proof(bytes_of(f));
    if (!proof)
      return finish(make_error_code(errc::protocol),
                    fmt::format("malformed handshake proof from {}", comm->peer_address()));
    if (auto why = check_proof(*proof); !why.empty()) return refuse(errc::auth, std::move(why));
    if (side == HandshakeSide::accepting) {
      if (on_authenticated && !on_authenticated())
        return finish(make_error_code(errc::aborted),
                      "dropped: too many peers were in their handshake at once");
      send_proof();  // the peer has proved itself: now it may have ours
      return read_next(&HandshakeOp::on_verdict, "the peer closed the comm during the handshake");
    }
    comm->async_write(one_frame(codec::encode_verdict({true, {}})), [](error_code) {});
    finish({}, {});
  }

  // A refusal may come instead of a HELLO or a proof; an acceptance may not (it would skip
  // the proofs).
  void refusal_instead(const Frame& f, const char* expected) {
    const auto verdict = codec::decode_verdict(bytes_of(f));
    if (verdict && !verdict->accepted) return on_verdict(f);
    finish(make_error_code(errc::protocol),
           fmt::format("{} sent a verdict where its {} belongs", comm->peer_address(), expected));
  }

  void on_verdict(const Frame& f) {
    const auto verdict = codec::decode_verdict(bytes_of(f));
    if (!verdict) return finish(make_error_code(errc::protocol), "malformed handshake verdict");
    if (verdict->accepted) return finish({}, {});
    // The peer says why; classify by its words' subject so both sides agree on the code.
    const auto& reason = verdict->reason;
    auto code = reason.find(kSpeaksTlsMark) != std::string::npos ? errc::tls
                : reason.find("auth token") != std::string::npos ? errc::auth
                : reason.find("version") != std::string::npos  ? errc::version
                : reason.find(kWrongRoleMark) != std::string::npos ? errc::wrong_role
                                                                   : errc::refused;
    finish(make_error_code(code),
           fmt::format("refused by the peer at {}: {}", comm->peer_address(), reason));
  }

  // Tells the peer why, closes the comm (the verdict is flushed first) and fails.
  void refuse(errc code, std::string reason) {
    comm->async_write(one_frame(codec::encode_verdict({false, reason})), [](error_code) {});
    finish(make_error_code(code), std::move(reason), true);
  }

  void finish(error_code ec, std::string detail, bool refused_here = false) {
    if (done) return;
    done = true;
    timer.cancel();
    if (timed_out) {
      ec = make_error_code(errc::timeout);
      detail = fmt::format("handshake with {} did not finish within {} ms", comm->peer_address(),
                           options.timeout.count());
    }
    if (!ec) comm->set_read_limits(options.limits);
    else if (refused_here && !timed_out) close_refused();
    else comm->abort();
    auto h = std::move(handler);
    h(ec, std::move(detail));
  }

  void close_refused() {
    comm->close();
    timer.expires_after(kRefusedLinger);
    timer.async_wait([self = shared_from_this()](error_code ec) {  // self: keeps the timer
      if (!ec) self->comm->abort();
    });
  }
};

}  // namespace

std::vector<char> framed_refusal(const std::string& reason) {
  const Message refusal = one_frame(codec::encode_verdict({false, reason}));
  std::vector<char> bytes;
  encode_prefix(refusal, bytes);
  const auto& frame = refusal.frames.front();
  bytes.insert(bytes.end(), frame.data(), frame.data() + frame.size());
  return bytes;
}

HandshakeOptions HandshakeOptions::from(const runtime::Config& c) {
  HandshakeOptions o;
  o.name = c.name;
  o.role = c.role;
  o.auth_token = c.auth_token;
  if (c.protocol_version_override) o.protocol_version = c.protocol_version_override;
  o.timeout = c.handshake_timeout;
  o.limits = c.limits;
  return o;
}

void async_handshake(const CommPtr& comm, const HandshakeOptions& options, HandshakeSide side,
                     HandshakeHandler handler, PeerAuthenticated on_authenticated) {
  std::make_shared<HandshakeOp>(comm, options, side, std::move(handler),
                                std::move(on_authenticated))
      ->start();
}

}  // namespace taskwire::comm
