// MpiPoller, receiving: routing matched messages to connections, heads and chunks,
// delivery in order, connection set-up (HELLO) and ends (CLOSE, GOODBYE, peer death).
#include <taskwire/comm/mpi/mpi_comm.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>
#include <taskwire/comm/mpi/mpi_poller_detail.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace taskwire::comm::mpi {
using namespace detail;

// ---- receiving ---------------------------------------------------------------------------

ConnectionPtr MpiPoller::route(int source, int tag) {
  if (tag < kFirstTag) return nullptr;
  auto it = routes_.find(route_key(source, tag));
  if (it != routes_.end()) return it->second;
  const int rel = tag - kFirstTag;
  if (rel % 2 == 1) return nullptr;  // to a connection of ours that is gone
  // A connection being opened by `source`: its first message must be a HELLO.
  auto c = std::make_shared<Connection>();
  c->peer = source;
  c->id = static_cast<std::uint32_t>(rel / 2);
  c->recv_tag = tag;
  c->send_tag = tag + 1;
  c->state = Connection::State::accepting;
  c->limits = default_limits_;
  c->peer_address = fmt::format("mpi://{}", source);
  c->local_address = fmt::format("mpi://{}", rank_);
  routes_[route_key(source, tag)] = c;
  return c;
}

bool MpiPoller::can_receive(const ConnectionPtr& c) {
  if (!c->recvq.empty() && !c->recvq.back().head_done) return false;  // what follows is unknown
  if (!c->recvq.empty() && !c->recvq.back().all_matched()) return true;  // a chunk: go on
  // A new message. Hold it matched but not received while the reader lags (backpressure:
  // a rendezvous sender then waits, eager data stays in MPI's own buffers).
  const std::uint64_t bound = c->limits.max_queued_bytes;
  if (draining_ || c->aborted || c->unread.load() <= bound) return true;
  c->holding = true;
  if (c->unread.load() > bound) return false;
  c->holding = false;  // the reader caught up meanwhile
  return true;
}

void MpiPoller::resume(const ConnectionPtr& c) {
  Locked lock(*this);
  if (!c->holding.exchange(false) || drained_) return;
  drain_matched(c);
  deliver_ready(c);
  wake_drivers();
}

void MpiPoller::on_matched(const ConnectionPtr& c, MPI_Message msg, MPI_Count count) {
  if (c->matched.empty() && can_receive(c)) {
    try_receive(c, msg, count);
  } else {
    c->matched.push_back({msg, count});
  }
}

void MpiPoller::drain_matched(const ConnectionPtr& c) {
  while (!c->matched.empty() && can_receive(c)) {
    Matched m = c->matched.front();
    c->matched.pop_front();
    try_receive(c, m.message, m.count);
  }
}

bool MpiPoller::try_receive(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count) {
  if (!c->recvq.empty() && !c->recvq.back().all_matched()) {
    receive_chunk(c, c->recvq.back(), msg, count);
  } else if (c->failed && count != 1) {
    discard_message(msg, count, c);  // out of step after a malformed head: wait for a CLOSE
  } else {
    receive_head(c, msg, count);
  }
  return true;
}

int MpiPoller::start_receive(void* buf, MPI_Count count, MPI_Message& msg, MPI_Request& req) {
  if (count <= INT_MAX) return MPI_Imrecv(buf, static_cast<int>(count), MPI_BYTE, &msg, &req);
  return MPI_Imrecv_c(buf, count, MPI_BYTE, &msg, &req);
}

void MpiPoller::discard_message(MPI_Message& msg, MPI_Count count, ConnectionPtr owner) {
  std::shared_ptr<char[]> scratch;
  if (count > 0) scratch.reset(new char[static_cast<std::size_t>(count)]);
  MPI_Request req;
  const int rc = start_receive(scratch.get(), count, msg, req);
  if (rc != MPI_SUCCESS) {
    spdlog::error("mpi: MPI_Imrecv (discard) failed: {}", mpi_text(rc));
    return;
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  if (!done) track(req, Pending{std::move(owner), nullptr, Pending::discard, std::move(scratch)});
}

void MpiPoller::receive_head(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count) {
  const auto bound = max_head_bytes(c->limits.max_frames);
  if (count < 1 || static_cast<std::uint64_t>(count) > bound) {
    discard_message(msg, count, c);
    c->failed = true;
    fail(c, errc::protocol,
         fmt::format("a message head of {} bytes (at most {} with max_frames {})", count, bound,
                     c->limits.max_frames));
    return;
  }
  InMessage& in = c->recvq.emplace_back();
  in.discard = c->aborted;
  in.head.resize(static_cast<std::size_t>(count));
  MPI_Request req;
  const int rc =
      MPI_Imrecv(in.head.data(), static_cast<int>(count), MPI_BYTE, &msg, &req);
  if (rc != MPI_SUCCESS) {
    in.head_done = true;
    in.discard = true;
    return fail(c, errc::io, "MPI_Imrecv failed: " + mpi_text(rc));
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);  // small heads are usually here already
  if (done) {
    taken_from(c->peer);
    on_head(c, in);
  }
  else track(req, Pending{c, &in, Pending::recv_head, nullptr});
}

void MpiPoller::receive_chunk(const ConnectionPtr& c, InMessage& in, MPI_Message& msg,
                              MPI_Count count) {
  const std::uint32_t fi = in.separate[in.next_sep];
  const std::uint64_t len = in.sep_len[in.next_sep];
  const std::uint64_t expected = std::min(in.chunk_bytes, len - in.next_offset);
  char* dst = nullptr;
  if (!in.discard) dst = in.frames[fi].mutable_data() + in.next_offset;
  in.next_offset += expected;
  if (in.next_offset >= len) {
    ++in.next_sep;
    in.next_offset = 0;
  }
  if (static_cast<std::uint64_t>(count) != expected) {
    discard_message(msg, count, c);
    in.discard = true;
    c->failed = true;
    return fail(c, errc::protocol,
                fmt::format("a chunk of {} bytes where {} were announced", count, expected));
  }
  std::shared_ptr<char[]> scratch;
  if (in.discard && count > 0) {
    scratch.reset(new char[static_cast<std::size_t>(count)]);
    dst = scratch.get();
  }
  MPI_Request req;
  const int rc = start_receive(dst, count, msg, req);
  if (rc != MPI_SUCCESS) {
    in.discard = true;
    return fail(c, errc::io, "MPI_Imrecv failed: " + mpi_text(rc));
  }
  ++in.outstanding;
  track(req, Pending{c, &in, Pending::recv_chunk, std::move(scratch)});
}

namespace {

// A control head (HELLO, ACCEPT, REFUSED, CLOSE): what is wrong with it in the connection's
// state, or "".
std::string read_control_head(const Connection& c, InMessage& in, const std::vector<char>& head) {
  const std::size_t n = head.size();
  switch (in.kind) {
    case kHello:
      if (n != 5 || c.state != Connection::State::accepting) return "an unexpected HELLO";
      in.hello_port = load_le<std::uint32_t>(head.data() + 1);
      return {};
    case kAccept:
    case kRefused:
      if (n != 1 || c.state != Connection::State::connecting)
        return "an unexpected connection reply";
      return {};
    case kClose:
      return n != 1 ? "a malformed CLOSE" : "";
    default:
      return fmt::format("a message of unknown kind {}", int(head[0]));
  }
}

// The frames of a data head whose table is sound: packed ones copied out, separate ones
// allocated for their chunks.
void unpack_frames(InMessage& in, const char* table, std::uint64_t nframes) {
  const char* packed_bytes = table + 8 * nframes;
  in.frames.reserve(nframes);
  for (std::uint64_t i = 0; i < nframes; ++i) {
    const std::uint64_t entry = load_le<std::uint64_t>(table + 8 * i);
    const std::uint64_t len = entry >> 1;
    if (entry & 1) {
      in.frames.push_back(Frame::allocate(len));
    } else {
      in.frames.push_back(Frame::copy_of(packed_bytes, len));
      packed_bytes += len;
    }
  }
}

// A data head: "" or what makes it unreadable (the stream cannot be followed). A limit that
// a sound frame table breaks goes to `broken` instead: its chunks are followed, not kept.
std::string read_data_head(const Connection& c, InMessage& in, const std::vector<char>& head,
                           std::string& broken) {
  const std::size_t n = head.size();
  if (c.state == Connection::State::accepting) return "data before the HELLO";
  if (n < kDataHeadFixed) return "a truncated data head";
  const std::uint64_t nframes = load_le<std::uint64_t>(head.data() + 1);
  const std::uint64_t chunk = load_le<std::uint64_t>(head.data() + 9);
  const auto& lim = c.limits;
  if (nframes > lim.max_frames)
    return fmt::format("a message of {} frames, limit is {}", nframes, lim.max_frames);
  // Divided, not multiplied: a frame-count limit set near 2^64 cannot wrap the size.
  if (nframes > (n - kDataHeadFixed) / 8 || chunk == 0) return "a truncated data head";
  const char* table = head.data() + kDataHeadFixed;
  std::uint64_t total = 0, packed = 0;
  for (std::uint64_t i = 0; i < nframes; ++i) {
    const std::uint64_t entry = load_le<std::uint64_t>(table + 8 * i);
    const std::uint64_t len = entry >> 1;
    if (entry & 1) in.separate.push_back(static_cast<std::uint32_t>(i));
    else packed += len;
    if (broken.empty() && len > lim.max_frame_bytes)
      broken = fmt::format("frame {} of {} bytes, limit is {}", i, len, lim.max_frame_bytes);
    // Compared with what the limit leaves before adding, as framing's decode_prefix does, so
    // byte limits near 2^64 cannot wrap the total.
    if (broken.empty() && len > lim.max_message_bytes - total)
      broken = fmt::format("a message of more than {} bytes, the limit", lim.max_message_bytes);
    if (broken.empty()) total += len;
    if (packed > kMaxPackedBytes) return "a malformed data head";
  }
  if (kDataHeadFixed + 8 * nframes + packed != n)
    return "a data head whose size does not match its frame table";
  in.chunk_bytes = chunk;
  in.sep_len.reserve(in.separate.size());
  for (auto i : in.separate) in.sep_len.push_back(load_le<std::uint64_t>(table + 8 * i) >> 1);
  if (broken.empty() && !in.discard) unpack_frames(in, table, nframes);
  return {};
}

}  // namespace

void MpiPoller::on_head(const ConnectionPtr& c, InMessage& in) {
  in.head_done = true;
  std::vector<char> head = std::move(in.head);
  in.head = {};
  in.kind = static_cast<Kind>(static_cast<unsigned char>(head[0]));
  std::string broken;
  const std::string unreadable = in.kind == kData ? read_data_head(*c, in, head, broken)
                                                  : read_control_head(*c, in, head);
  if (!unreadable.empty()) {
    // Nothing after it can be parsed: the connection fails.
    in.discard = true;
    in.kind = kData;
    in.separate.clear();
    in.sep_len.clear();
    c->failed = true;
    fail(c, errc::protocol, unreadable);
  } else if (!broken.empty()) {
    in.discard = true;
    fail(c, errc::protocol, broken);
  }
  deliver_ready(c);
}

void MpiPoller::deliver_ready(const ConnectionPtr& c) {
  while (!c->recvq.empty() && c->recvq.front().complete()) {
    InMessage in = std::move(c->recvq.front());
    c->recvq.pop_front();
    switch (in.kind) {
      case kData:
        if (!in.discard && !c->aborted) {
          if (auto comm = c->comm.lock()) {
            Message m(std::move(in.frames));
            c->unread += held_cost(m.total_bytes());
            post(c, [comm = std::move(comm), m = std::move(m)]() mutable {
              comm->on_message(std::move(m));
            });
          }
        }
        break;
      case kHello:
        on_hello(c, in.hello_port);
        break;
      case kAccept:
        if (c->state == Connection::State::connecting) {
          c->state = Connection::State::open;
          post(c, [h = std::move(c->on_connect), comm = std::move(c->pending_comm)]() mutable {
            h({}, std::move(comm));
          });
          c->on_connect = nullptr;
        }
        break;
      case kRefused:
        c->peer_closed = true;
        c->close_queued = c->close_sent = true;  // the peer kept no state: no CLOSE
        fail_connect(c, make_error_code(errc::refused));
        break;
      case kClose:
        on_peer_close(c);
        break;
    }
  }
  maybe_retire(c);
}

void MpiPoller::on_hello(const ConnectionPtr& c, std::uint32_t port) {
  auto it = listeners_.find(port);
  if (finished_ || it == listeners_.end() || !*it->second->owner) {
    spdlog::debug("mpi: refusing a connection from rank {} to port {}: nothing listens there",
                  c->peer, port);
    c->state = Connection::State::refused;
    c->peer_closed = true;
    c->close_queued = true;  // REFUSED stands for CLOSE
    enqueue_control(c, kRefused);
    c->close_sent = true;
    return;
  }
  const auto& entry = it->second;
  c->state = Connection::State::open;
  c->limits = entry->limits;
  c->max_chunk_bytes = entry->max_chunk_bytes;
  c->local_address = entry->address;
  c->strand = asio::make_strand(entry->executor);
  c->owner = entry->owner;
  auto comm = std::make_shared<MpiComm>(shared_from_this(), c, *c->strand, c->local_address,
                                        c->peer_address);
  c->comm = comm;
  enqueue_control(c, kAccept);
  post(c, [on = entry->on_comm, comm = std::move(comm)]() mutable { on(std::move(comm)); });
}

void MpiPoller::on_peer_close(const ConnectionPtr& c) {
  if (c->state == Connection::State::accepting) {
    // A CLOSE without a HELLO: an abandoned attempt whose HELLO we refused. Nothing to do.
    c->peer_closed = true;
    c->close_queued = c->close_sent = true;
    return;
  }
  c->peer_closed = true;
  end_comm(c, make_error_code(errc::closed));
  fail_queued_writes(c, make_error_code(errc::closed), false);
  queue_close(c);
}

void MpiPoller::on_peer_gone(int rank, errc why) {
  const auto ec = make_error_code(why);
  std::vector<ConnectionPtr> affected;
  for (auto& [key, c] : routes_)
    if (c->peer == rank) affected.push_back(c);
  for (auto& c : affected) {
    c->peer_gone = true;
    if (c->state == Connection::State::connecting) {
      fail_connect(c, ec);
    } else if (!c->peer_closed) {
      end_comm(c, ec);
    }
    c->peer_closed = true;
    c->close_queued = true;
    fail_queued_writes(c, ec, true);
    for (auto& in : c->recvq) in.discard = true;
    maybe_retire(c);
  }
}

}  // namespace taskwire::comm::mpi
