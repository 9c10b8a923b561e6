#include <taskwire/http/task_stream.hpp>

#include <algorithm>

namespace taskwire::http {

TaskStreamEntry& TaskStream::next_slot() {
  if (ring_.size() < capacity_) return ring_.emplace_back();
  TaskStreamEntry& e = ring_[oldest_];
  oldest_ = (oldest_ + 1) % ring_.size();
  return e;
}

int TaskStream::lane_for(std::string_view worker, int nthreads, double start, double stop) {
  auto it = lanes_.find(worker);
  if (it == lanes_.end()) it = lanes_.emplace(std::string(worker), std::vector<double>{}).first;
  auto& ends = it->second;
  ends.resize(static_cast<std::size_t>(std::max(1, nthreads)), 0.0);
  // The first lane free by `start`, else the one that frees first (results reach the
  // scheduler a little late, so runs may seem to overlap).
  std::size_t pick = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (ends[i] <= start) {
      pick = i;
      break;
    }
    if (ends[i] < ends[pick]) pick = i;
  }
  ends[pick] = stop;
  return static_cast<int>(pick);
}

void TaskStream::record_task(const TaskRecord& t) {
  if (capacity_ == 0) return;
  const int lane = t.thread >= 0 && t.thread < t.nthreads
                       ? t.thread
                       : lane_for(t.worker, t.nthreads, t.start, t.stop);
  TaskStreamEntry& e = next_slot();
  e.seq = next_seq_++;
  e.key.assign(t.key);
  e.function.assign(t.function);
  e.worker.assign(t.worker);
  e.lane = lane;
  e.start = t.start;
  e.stop = t.stop;
  e.transfer_seconds = t.transfer_seconds;
  e.nbytes = t.nbytes;
  e.erred = t.erred;
  e.transfer = false;
}

void TaskStream::record_transfer(std::string_view key, std::string_view peer, double start,
                                 double stop, std::int64_t nbytes) {
  if (capacity_ == 0) return;
  TaskStreamEntry& e = next_slot();
  e.seq = next_seq_++;
  e.key.assign(key);
  e.function.assign("transfer");
  e.worker.assign(peer);
  e.lane = 0;
  e.start = start;
  e.stop = stop;
  e.transfer_seconds = stop - start;
  e.nbytes = nbytes;
  e.erred = false;
  e.transfer = true;
}

std::vector<TaskStreamEntry> TaskStream::since(std::uint64_t after, std::size_t limit) const {
  std::vector<TaskStreamEntry> out;
  const std::size_t n = ring_.size();
  const std::uint64_t first = n == 0 ? next_seq_ : next_seq_ - n;  // seq of the oldest held
  std::uint64_t from = std::max(after + 1, first);
  if (next_seq_ - from > limit) from = next_seq_ - limit;
  out.reserve(static_cast<std::size_t>(next_seq_ - from));
  for (std::uint64_t s = from; s < next_seq_; ++s) {
    const std::size_t index = (oldest_ + static_cast<std::size_t>(s - first)) % n;
    out.push_back(ring_[index]);
  }
  return out;
}

}  // namespace taskwire::http
