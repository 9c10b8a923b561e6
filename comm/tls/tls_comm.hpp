#pragma once
// One end of a TLS connection (Boost.Asio's ssl::stream over a TCP socket on its own strand)
// speaking the framing of comm/core/framing.hpp; the TLS handshake is done before (see
// tls_handshake.hpp).
//
// The model is TcpComm's (all state on the strand, every handler holding the comm, a public
// call from elsewhere posted to the strand, user handlers never run inside the call), its
// reads decoded by the shared comm::FrameDecoder. What TLS changes:
// - Writes cannot be offered to the socket directly (OpenSSL must encrypt first), so each
//   message goes out with async_write and its handler runs from that completion. The prefix
//   and small frames are copied into one contiguous buffer, so a small message is one TLS
//   record and one socket write; frames of kLargeFrameBytes and more are written from
//   their own memory.
// - close() sends TLS's close_notify once the queued writes are out (Asio's async_shutdown,
//   which then discards input until the peer's close_notify or end of stream: the drain
//   TcpComm does by hand), then closes the socket.
// - A peer closing the TCP connection without close_notify reads as closed between messages
//   and as a protocol error part-way through one, as over tcp.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/comm/core/frame_decoder.hpp>
#include <taskwire/comm/tcp/tcp_comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <boost/asio/ssl.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::comm::tls {

using Stream = asio::ssl::stream<tcp::Socket>;

/// "tls://HOST:PORT" for an endpoint (IPv6 hosts bracketed).
std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint);

class TlsComm final : public Comm, public std::enable_shared_from_this<TlsComm> {
 public:
  /// Takes a stream whose TLS handshake has completed. `limits` bound what this end
  /// accepts and what it agrees to send.
  TlsComm(std::unique_ptr<Stream> stream, const runtime::Limits& limits);
  ~TlsComm() override;

  void async_read(ReadHandler handler) override;
  void async_write(Message message, WriteHandler handler) override;
  void close() override;
  void abort() noexcept override;
  bool closed() const noexcept override { return closed_flag_.load(); }
  std::uint64_t bytes_received() const noexcept override { return bytes_received_.load(); }
  void set_read_limits(const runtime::Limits& limits) override;
  std::string local_address() const override { return local_; }
  std::string peer_address() const override { return peer_addr_; }
  asio::any_io_executor executor() const override { return strand_; }

 private:
  enum class Side { read, write };
  struct PendingWrite {
    Message message;
    WriteHandler handler;
  };

  // Each runs on the strand.
  void start_read(ReadHandler handler);
  void start_write(Message message, WriteHandler handler);
  void start_close();
  void advance();  // decodes what was received; delivers a message or reads more
  void on_read(const error_code& ec, std::size_t n);
  void on_large_read(const error_code& ec);
  void on_read_error(const error_code& ec);
  void send_next();
  void gather(const Message& message);  // fills wbufs_ (and staged_) for one message
  void on_write(const error_code& ec);
  void finish_close();  // writes flushed: close_notify, then close once the peer answers
  void shut_down_tls();
  void protocol_violation(const std::string& text);
  void fail(error_code cause, Side side);
  error_code later_error() const;
  template <class F>
  void run_on_strand(F&& f);
  void post_handler(ReadHandler h, error_code ec);
  void post_handler(WriteHandler h, error_code ec);

  const runtime::Limits limits_;  // what this end agrees to send
  runtime::Limits read_limits_;   // what it accepts (strand only)
  tcp::Strand strand_;
  std::unique_ptr<Stream> stream_;
  std::string local_, peer_addr_;
  std::atomic<bool> closed_flag_{false};

  // Read side.
  ReadHandler pending_read_;
  FrameDecoder decoder_;
  bool reading_ = false;  // a stream read is in flight
  std::atomic<std::uint64_t> bytes_received_{0};  // plaintext bytes, counted as they come

  // Write side.
  std::deque<PendingWrite> writes_;
  bool writing_ = false;
  std::vector<char> prefix_;                // reused for every message
  std::vector<char> staged_;                // the prefix and small frames, copied together
  std::vector<asio::const_buffer> wbufs_;   // reused for every message

  // Lifecycle.
  bool close_requested_ = false;  // close(): no new operations, flush, then close_notify
  bool shutting_down_ = false;    // close_notify sent (or being sent)
  bool peer_eof_ = false;         // the peer closed its side (seen on a read)
  error_code failed_;             // set once the comm is dead: what later operations fail with
};

}  // namespace taskwire::comm::tls
