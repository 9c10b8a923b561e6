#pragma once
// One end of an in-process comm pair. State is confined to the end's strand; a write posts
// the message to the peer's strand, so order is kept and close (posted after the writes)
// cannot overtake them.
//
// Bounded queues (comm.hpp): a message sits in the peer's inbox until the peer's reader takes
// it, so the bytes queued are those written and not yet taken there. Each direction shares a
// Flow between its writer and its reader: the reader counts what it took, the writer holds
// the handler of a write while more than the bound is queued ahead of it, and is woken (a post
// to its strand) only when it is holding one.
//
// The two ends may live on different contexts, torn down on different threads. An end never
// holds a strong reference to its peer outside the peer's own strand: the reference that
// reaches the peer travels inside the handler posted there, so the peer is destroyed on its
// own context (or while that context shuts down), never on this thread while the peer's
// io_context destroys the services its strand needs. A post goes only to a context that has
// not begun to shut down (ContextLife, in the .cpp).
#include <taskwire/comm/core/comm.hpp>

#include <atomic>
#include <cstdint>
#include <deque>

namespace taskwire::runtime {
class UrgentWork;
}

namespace taskwire::comm::inproc {

struct ContextLife;

class InprocComm final : public Comm, public std::enable_shared_from_this<InprocComm> {
 public:
  /// `max_queued_bytes`: the bound on what this end's writes queue in the peer's inbox.
  InprocComm(asio::any_io_executor executor, std::string local, std::string peer,
             std::uint64_t max_queued_bytes);
  ~InprocComm() override;
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
  void drop_held_handlers() noexcept override;

 private:
  /// One direction's queue accounting, shared by its writer and its reader.
  struct Flow {
    std::atomic<std::uint64_t> taken{0};       ///< bytes the reader took (or dropped), in all
    std::atomic<bool> reader_gone{false};      ///< closed, aborted or destroyed: holds nothing
    std::atomic<bool> writer_waiting{false};   ///< the writer holds a handler: wake it
  };
  /// A write whose handler waits for the bytes ahead of it to drain.
  struct HeldWrite {
    std::uint64_t start;  ///< bytes written on this end before the message
    WriteHandler handler;
  };

  void deliver(Message message);  // on this end's strand, from the peer
  void peer_gone();               // on this end's strand: the peer closed or aborted
  void flush_read();
  void took(std::uint64_t bytes);  // the reader took or dropped `bytes` of its inbox
  void stop_reading();             // no more reads: release the peer's writer
  void release_held();             // on this end's strand: runs handlers no longer held
  void wake_writer();              // the peer's writer may have handlers to release
  /// Posts to this end's strand with runtime::post_urgent (defined in the .cpp).
  template <class F>
  void post(F&& f);
  /// Posts `f(peer)` to the peer's strand; false if the peer or its context is gone.
  template <class F>
  bool post_to_peer(F&& f);

  asio::strand<asio::any_io_executor> strand_;
  runtime::UrgentWork* urgent_;  // every hop is posted with runtime::post_urgent
  std::string local_, peer_addr_;
  std::weak_ptr<InprocComm> peer_;
  std::shared_ptr<ContextLife> life_;       // this end's context: still running?
  std::shared_ptr<ContextLife> peer_life_;  // the peer's (set by link)
  std::deque<Message> inbox_;
  ReadHandler pending_read_;
  bool peer_closed_ = false;
  bool aborted_ = false;
  std::atomic<bool> closed_flag_{false};

  const std::uint64_t max_queued_bytes_;
  std::shared_ptr<Flow> out_ = std::make_shared<Flow>();  // this end -> peer (set by link)
  std::shared_ptr<Flow> in_ = std::make_shared<Flow>();   // peer -> this end
  std::uint64_t written_ = 0;      // bytes written on this end, in all
  std::deque<HeldWrite> held_;
  bool tracked_ = false;  // by HeldHandlers, before this end first holds a handler
};

}  // namespace taskwire::comm::inproc
