#pragma once
// One end of an mpi:// connection, as the user sees it. Writes go straight to the MpiPoller
// (which posts the Isend at once when the connection is idle); messages the poller receives
// are posted to this comm's strand, where they wait in the inbox for async_read. All of the
// inbox and read state is confined to the strand.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/comm/mpi/mpi_connection.hpp>

#include <atomic>
#include <deque>
#include <memory>

namespace taskwire::comm::mpi {

class MpiPoller;

class MpiComm final : public Comm, public std::enable_shared_from_this<MpiComm> {
 public:
  MpiComm(std::shared_ptr<MpiPoller> poller, ConnectionPtr conn,
          asio::strand<asio::any_io_executor> strand, std::string local, std::string peer);
  ~MpiComm() override;  ///< aborts the connection unless it was closed

  void async_read(ReadHandler handler) override;
  void async_write(Message message, WriteHandler handler) override;
  void close() override;
  void abort() noexcept override;
  bool closed() const noexcept override { return closed_.load(); }
  std::string local_address() const override { return local_; }
  std::string peer_address() const override { return peer_addr_; }
  asio::any_io_executor executor() const override { return strand_; }
  void drop_held_handlers() noexcept override;

  // From the poller, on the strand.
  void on_message(Message message);
  void on_end(error_code ec);  ///< no more messages: closed, protocol, peer_lost, io

 private:
  void flush_read();
  void consumed(const Message& m);  ///< the reader took (or dropped) `m`: may resume receiving

  std::shared_ptr<MpiPoller> poller_;
  ConnectionPtr conn_;
  asio::strand<asio::any_io_executor> strand_;
  std::string local_, peer_addr_;
  const std::uint64_t max_unread_bytes_;  ///< the connection's limits.max_queued_bytes

  // strand-confined
  std::deque<Message> inbox_;
  ReadHandler pending_read_;
  std::shared_ptr<MpiComm> reading_;  ///< self while a read is pending
  error_code end_;
  bool reported_end_ = false;
  bool tracked_ = false;  ///< by HeldHandlers

  std::atomic<bool> closed_{false}, local_closed_{false}, aborted_{false};
};

}  // namespace taskwire::comm::mpi
