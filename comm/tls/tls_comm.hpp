#pragma once
// One end of a TLS connection speaking the framing of comm/core/framing.hpp; the TLS
// handshake is done before (see tls_handshake.hpp). OpenSSL writes the non-blocking socket
// itself, as TcpComm writes its socket; reads go through the comm's own socket reads
// (tls_io.hpp).
//
// The model is TcpComm's (the part they share is tcp::StrandComm): all state on the strand,
// every handler holding the comm, a public call from elsewhere posted to the strand, user
// handlers never run inside the call, reads decoded by the shared comm::FrameDecoder. A message
// is offered to SSL_write at once; when the socket takes it whole its handler runs at the end
// of the current turn, without a trip through the reactor (what keeps a small round trip near
// tcp's). What the socket does not take is finished after an async_wait for it to become
// writable (or after a socket read: OpenSSL may need to read first). The prefix and small
// frames are copied into one buffer, so a small message is one TLS record and one send; frames
// of kLargeFrameBytes and more are encrypted from their own memory. Reads call SSL_read until
// OpenSSL says it must wait, then read the socket into the session's input buffer
// (async_read_some, as TcpComm reads: Asio tries one recv, then waits without re-arming the
// descriptor); a whole message found while async_read is still running is delivered by a post.
//
// close() sends TLS's close_notify once the queued writes are out, then discards input until
// the peer's close_notify or end of stream, then closes the socket. A peer closing the TCP
// connection without close_notify reads as closed between messages and as a protocol error
// part-way through one, as over tcp.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/comm/core/frame_decoder.hpp>
#include <taskwire/comm/tls/tls_io.hpp>
#include <taskwire/runtime/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace taskwire::comm::tls {

/// "tls://HOST:PORT" for an endpoint (IPv6 hosts bracketed).
std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint);

class TlsComm final : public tcp::StrandComm<TlsComm> {
 public:
  /// Takes a stream whose TLS handshake has completed. `limits` bound what this
  /// end accepts and what it agrees to send.
  TlsComm(std::unique_ptr<TlsStream> stream, const runtime::Limits& limits);
  ~TlsComm() override;

 private:
  friend class tcp::StrandComm<TlsComm>;
  using Side = tcp::Side;
  // Who waits for the socket: the reader, the writer, or close() (close_notify, then drain).
  enum class Waiter { read, write, close };
  struct PendingWrite {
    Message message;
    WriteHandler handler;
  };

  // Each runs on the strand.
  void start_read(ReadHandler handler);
  void start_write(Message message, WriteHandler handler);
  void start_close();
  void advance();  // decodes what was received; delivers a message or reads more
  bool read_into(std::span<char> into);  // false: it waits for the socket, or failed
  void deliver(Message message);
  void on_read_error(const error_code& ec);
  void send_queued();
  bool write_front();  // true once the front message is wholly taken
  void gather(const Message& message);  // fills pieces_ (and staged_) for one message
  void wait(SslOutcome outcome, Waiter who);
  bool& waiting(Waiter who);
  void read_socket();  // one socket read into the session's input buffer, if none runs
  void on_input(const error_code& ec, std::size_t n);
  void on_ready(Waiter who, const error_code& ec);
  void finish_close();  // writes flushed: close_notify, then drain
  void drain();         // discards input until the peer's close_notify or end of stream
  void close_socket();
  void fail(error_code cause, Side side);
  SSL* ssl() const noexcept { return stream_->ssl.get(); }

  std::unique_ptr<TlsStream> stream_;

  // Read side.
  FrameDecoder decoder_;
  std::span<char> large_into_;   // a large frame being filled (read_all), across waits
  std::size_t large_filled_ = 0;
  bool reading_large_ = false;
  bool read_waiting_ = false;    // the reader waits for the socket or a posted continuation
  bool socket_reading_ = false;  // a socket read into the session's input buffer runs
  unsigned input_waiters_ = 0;   // bit per Waiter: who goes on once that read completes
  bool starting_read_ = false;   // inside start_read: a message found now is posted
                                 // (bytes_received_ counts plaintext bytes as they come)

  // Write side.
  std::deque<PendingWrite> writes_;
  std::vector<std::span<const char>> pieces_;  // of the front message; empty until gathered
  std::size_t piece_ = 0, piece_offset_ = 0;   // how far SSL_write has taken it
  bool write_waiting_ = false;
  std::vector<char> prefix_;  // reused for every message
  std::vector<char> staged_;  // the prefix and small frames, copied together

  // Lifecycle.
  bool shutdown_started_ = false;
  bool notify_sent_ = false;      // close_notify handed to the socket
  bool close_waiting_ = false;
  bool socket_closed_ = false;    // the session must not be used again
  bool peer_eof_ = false;         // the peer closed its side (seen on a read)
};

}  // namespace taskwire::comm::tls
