#pragma once
// One end of an in-process comm pair. State is confined to the end's strand; a write posts
// the message to the peer's strand, so order is kept and close (posted after the writes)
// cannot overtake them.
#include <taskwire/comm/core/comm.hpp>

#include <deque>

namespace taskwire::runtime {
class UrgentWork;
}

namespace taskwire::comm::inproc {

class InprocComm final : public Comm, public std::enable_shared_from_this<InprocComm> {
 public:
  InprocComm(asio::any_io_executor executor, std::string local, std::string peer);
  /// Links two fresh ends together.
  static void link(const std::shared_ptr<InprocComm>& a, const std::shared_ptr<InprocComm>& b);

  void async_read(ReadHandler handler) override;
  void async_write(Message message, WriteHandler handler) override;
  void close() override;
  void abort() noexcept override;
  bool closed() const noexcept override { return closed_flag_.load(); }
  std::string local_address() const override { return local_; }
  std::string peer_address() const override { return peer_addr_; }
  asio::any_io_executor executor() const override { return strand_; }

 private:
  void deliver(Message message);  // on this end's strand, from the peer
  void peer_gone();               // on this end's strand: the peer closed or aborted
  void flush_read();
  /// Posts to this end's strand with runtime::post_urgent (defined in the .cpp).
  template <class F>
  void post(F&& f);

  asio::strand<asio::any_io_executor> strand_;
  runtime::UrgentWork* urgent_;  // every hop is posted with runtime::post_urgent
  std::string local_, peer_addr_;
  std::weak_ptr<InprocComm> peer_;
  std::deque<Message> inbox_;
  ReadHandler pending_read_;
  bool peer_closed_ = false;
  bool aborted_ = false;
  std::atomic<bool> closed_flag_{false};
};

}  // namespace taskwire::comm::inproc
