#pragma once
// One end of a TCP connection speaking the framing of comm/core/framing.hpp.
//
// All state is confined to the comm's strand (the socket's executor), in the manner of Asio's
// chat-server session: every handler captures `self`, so the comm lives exactly as long as an
// operation on it is pending. A public call made on the strand runs at once; from any other
// thread it is posted to the strand. Either way a user handler is never run inside the call.
//
// Writes are queued, one in flight, sent as one scatter-gather write of the prefix and the
// frames (no payload copy). A message is first offered to the (non-blocking) socket directly;
// what it does not take at once is finished with async_write. A write handler whose message
// went out at once runs at the end of the current turn on the strand (the handler that made
// the write), sparing a trip through the reactor: this is what keeps a small round trip close
// to a raw socket's. A handler runs once its message is wholly taken by the socket, when
// nothing is queued ahead of it: the bound of comm.hpp holds with nothing queued ahead (the
// kernel's socket buffers, which it bounds itself, hold the rest). Reads are decoded by the
// shared comm::FrameDecoder (as tls:// decodes): several small messages arriving together
// cost one syscall; a large frame is allocated once and read straight into. Limits are
// checked before anything is allocated for an announced size; a violation is logged with the
// peer's address and aborts this comm only.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/comm/core/frame_decoder.hpp>
#include <taskwire/comm/tcp/strand_comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm::tcp {

/// A TCP socket whose handlers run on its own strand.
using Socket = asio::basic_stream_socket<asio::ip::tcp, Strand>;

/// "tcp://HOST:PORT" for an endpoint (IPv6 hosts bracketed).
std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint);
/// Data left unacknowledged this long fails the comm (ETIMEDOUT), as Dask's
/// distributed.comm.timeouts.tcp: without it a host cut off for a while keeps its comms for
/// the kernel's ~15 minutes of retransmissions, backed off so far apart (25 s after 30 s of
/// silence) that a healed worker learns of it only at the next one; failed, the worker
/// reconnects with fresh SYNs that get through within a second of the heal.
inline constexpr std::chrono::milliseconds kUserTimeout{30'000};

/// Sets TCP_NODELAY, SO_KEEPALIVE and TCP_USER_TIMEOUT (kUserTimeout) on a connected socket,
/// logging at debug what it cannot set; `scheme` names the comm in that log.
template <class Socket>
void set_socket_options(Socket& socket, const char* scheme) {
  error_code ec;
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) spdlog::debug("{}: cannot set TCP_NODELAY: {}", scheme, ec.message());
  socket.set_option(asio::socket_base::keep_alive(true), ec);
  if (ec) spdlog::debug("{}: cannot set SO_KEEPALIVE: {}", scheme, ec.message());
  using UserTimeout = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_USER_TIMEOUT>;
  socket.set_option(UserTimeout(static_cast<int>(kUserTimeout.count())), ec);
  if (ec) spdlog::debug("{}: cannot set TCP_USER_TIMEOUT: {}", scheme, ec.message());
}

/// Translates an Asio/system error into the comm vocabulary: eof, reset, broken pipe -> closed;
/// refused -> refused; operation_aborted -> aborted; anything else -> io (the original text is
/// logged at debug level with `where`).
error_code translate_error(const error_code& ec, std::string_view where);

class TcpComm final : public StrandComm<TcpComm> {
 public:
  /// Takes a connected socket; sets TCP_NODELAY and SO_KEEPALIVE. `limits` bound what this
  /// end accepts and what it agrees to send.
  TcpComm(Socket socket, const runtime::Limits& limits);
  ~TcpComm() override;

 private:
  friend class StrandComm<TcpComm>;
  struct PendingWrite {
    Message message;
    WriteHandler handler;
  };

  // Each runs on the strand.
  void start_read(ReadHandler handler);
  void start_write(Message message, WriteHandler handler);
  void start_close();
  void advance();  // decodes what was received; delivers a message or reads more
  void read_some(std::span<char> into);         // one socket read of what is there
  void read_large_frame(std::span<char> into);  // fills `into` entirely
  void on_read(const error_code& ec, std::size_t n);
  void on_large_read(const error_code& ec);
  void on_read_error(const error_code& ec);
  void send_queued();
  void on_write(const error_code& ec);
  void finish_close();  // writes flushed: shut down the send side, then drain
  void drain();                              // after close(): discard input until the peer closes
  void drain_step(const error_code& ec);
  void fail(error_code cause, Side side);

  Socket socket_;

  // Read side.
  FrameDecoder decoder_;
  bool socket_reading_ = false;  // bytes_received_ counts every socket read, large frames' too

  // Write side.
  std::deque<PendingWrite> writes_;
  bool writing_ = false;
  std::vector<char> prefix_;             // reused for every message
  std::vector<asio::const_buffer> wbufs_;  // reused for every message

  // Lifecycle.
  bool send_shut_ = false;
  bool peer_eof_ = false;  // the peer closed its side (seen on a read)
};

}  // namespace taskwire::comm::tcp
