// Results fetched straight from the workers holding them (get_data), in requests of at most
// kFetchBatchBytes of results each. A worker serializes all that one request asks for before
// it sends any of it, beside the live values it keeps: a gather of every result it holds in
// one request added their whole size to its peak (docs/measurements.md, "The first cluster in
// a process"). Dask's workers bound their own fetches from peers the same way
// (transfer_message_bytes_limit).
#include <taskwire/client/client_core.hpp>

#include <taskwire/comm/core/connect.hpp>

#include <atomic>

namespace taskwire::client {

using protocol::Op;

std::vector<std::vector<std::string>> ClientCore::fetch_batches(
    const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> batches;
  std::uint64_t bytes = 0;
  std::lock_guard lock(mu_);
  for (const auto& k : keys) {
    const auto it = keys_.find(k);
    const std::uint64_t n = it == keys_.end() ? 0 : it->second.nbytes;
    if (batches.empty() || (bytes + n > kFetchBatchBytes && !batches.back().empty())) {
      batches.emplace_back();
      bytes = 0;
    }
    batches.back().push_back(k);
    bytes += n;
  }
  return batches;
}

void ClientCore::fetch_from(const std::string& address, const std::vector<std::string>& keys,
                            std::map<std::string, runtime::Frame>& out) {
  for (const auto& batch : fetch_batches(keys))
    exchange_with_worker(address, fetch_time_allowed(batch),
                         [&](const comm::CommPtr& comm, const TimeLeft& left) {
                           get_data(comm, address, batch, left, out);
                         });
}

void ClientCore::get_data(const comm::CommPtr& comm, const std::string& address,
                          const std::vector<std::string>& keys, const TimeLeft& left,
                          std::map<std::string, runtime::Frame>& out) {
  runtime::BatchWriter w;
  static std::atomic<std::uint64_t> ids{0};
  const auto id = ++ids;
  w.add(Op::get_data, protocol::GetData{id, keys});
  comm::write_sync(comm, w.take(), left());
  auto reply = comm::read_sync(comm, left());
  runtime::for_each_op(reply, [&](runtime::OpReader& r) {
    if (r.op() != Op::data_reply)
      throw runtime::SerializationError("expected data_reply from " + address);
    auto b = r.body<protocol::DataReply>();
    if (b.keys.size() != r.frames().size())
      throw runtime::SerializationError("data_reply from " + address + " has mismatched frames");
    for (std::size_t i = 0; i < b.keys.size(); ++i) out.emplace(b.keys[i], r.frames()[i]);
  });
}

std::chrono::milliseconds ClientCore::fetch_time_allowed(const std::vector<std::string>& keys) {
  std::uint64_t bytes = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& k : keys)
      if (auto it = keys_.find(k); it != keys_.end()) bytes += it->second.nbytes;
  }
  return time_allowed(bytes);
}

}  // namespace taskwire::client
