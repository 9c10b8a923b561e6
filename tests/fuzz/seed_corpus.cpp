// Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/TARGET/seed-*), every input
// made by the project's own encoders (BatchWriter, wire::Writer, encode_prefix), or checks
// that the committed seeds are still what these encoders make (ctest: a format change that
// leaves the seeds stale fails there). Usage: fuzz_seed_corpus write|check CORPUS_DIR
#include "fuzz_support.hpp"

#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/handshake_codec.hpp>
#include <taskwire/runtime/batch.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace {

namespace fs = std::filesystem;
namespace protocol = taskwire::protocol;
using taskwire::runtime::BatchWriter;
using taskwire::runtime::Frame;
using taskwire::runtime::Message;

// A value of each body type with every field set, so each field's decoder is reached.
protocol::TaskSpec sample_task() {
  protocol::TaskSpec t;
  t.key = "inc-1";
  t.function = "inc";
  t.args = {{protocol::ArgSpec::frame, 0, ""}, {protocol::ArgSpec::dependency, 0, "inc-0"}};
  t.dependencies = {"inc-0"};
  t.priority = -3;
  t.retries = 2;
  t.user_priority = 1;
  t.resources = {{"GPU", 1}, {"MEM", 4e9}};
  t.workers = {"w0", "tcp://127.0.0.1:4000"};
  t.allow_other_workers = true;
  return t;
}
void fill(protocol::UpdateGraph& b) {
  b = {{sample_task()}, {"inc-1"}, {{"scatter-1", 4096, {"tcp://127.0.0.1:4000", "mpi://2"}}}};
}
void fill(protocol::Keys& b) { b.keys = {"a", "bb"}; }
void fill(protocol::CancelKeys& b) { b = {{"a", "bb"}, true}; }
void fill(protocol::KeysCancelled& b) { b = {{"a"}, "cancelled by client"}; }
void fill(protocol::KeyInMemory& b) { b = {"inc-1", 8, {"tcp://127.0.0.1:4000"}}; }
void fill(protocol::KeyErred& b) {
  b = {"k", "failed", "k", "boom", "std::runtime_error", "w0", "tcp://127.0.0.1:4000"};
}
void fill(protocol::RegisterWorker& b) {
  b = {"w0", "mpi://2", 4, true, {"tcp://127.0.0.1:4000"}, "node-1", {{"GPU", 2}}};
}
void fill(protocol::Heartbeat& b) { b = {1 << 20, 3}; }
void fill(protocol::SchedulerInfoRequest& b) { b.request_id = 9; }
void fill(protocol::SchedulerInfo& b) {
  protocol::WorkerReport w{"mpi://2", {"tcp://127.0.0.1:4000"}, "w0", "node-1", 4, 1 << 20,
                           2, 5, 1, 8, 0.5, {{"GPU", 2}}, {{"GPU", 1}}, true, true};
  b = {9, "tcp://127.0.0.1:8786", {"mpi://0", "tcp://127.0.0.1:8786"}, 2,
       {{"memory", 1}, {"processing", 5}, {"no-worker", 1}}, {w}, {{"k", "resources TPU=1"}}};
}
void fill(protocol::ThreadsBusy& b) { b.count = 1; }
void fill(protocol::WorkerDied& b) { b = {"tcp://127.0.0.1:4000", "w0", "SIGSEGV", {"k"}}; }
void fill(protocol::TaskFinished& b) { b = {"k", 8, 0.25, 1, 0.01, 0.002, 4096}; }
void fill(protocol::StealRequest& b) { b = {"k", 3}; }
void fill(protocol::StealResponse& b) { b = {"k", true, 3}; }
void fill(protocol::WorkerStatus& b) { b.paused = true; }
void fill(protocol::TaskErred& b) { b = {"k", "failed", "std::invalid_argument"}; }
void fill(protocol::WorkerRefused& b) { b.reason = "name taken"; }
void fill(protocol::CloseWorker& b) { b = {"no heartbeat for 12 s", true}; }
void fill(protocol::MissingData& b) { b = {"k", "dep", "tcp://127.0.0.1:4001", true}; }
void fill(protocol::ComputeTask& b) {
  b = {sample_task(), {{"inc-0", {"tcp://127.0.0.1:4001"}}}, 3, {{"inc-0", 0}}, {"inc-0"}};
}
void fill(protocol::GetData& b) { b = {7, {"a", "b"}, false}; }
void fill(protocol::DataReply& b) { b = {7, {"a"}, {"b"}}; }
void fill(protocol::UpdateData& b) { b = {5, {"scatter-1"}}; }
void fill(protocol::UpdateDataReply& b) { b = {5, {"scatter-1"}, {8}}; }
void fill(protocol::RetireWorker& b) { b.reason = "its --lifetime is over"; }
void fill(protocol::AcquireReplicas& b) {
  b.who_has = {{"inc-1", {"tcp://127.0.0.1:4001"}}, {"inc-2", {"tcp://127.0.0.1:4001", "mpi://3"}}};
}
void fill(protocol::RetireWorkersRequest& b) { b = {4, {"mpi://2", "w0"}, 1}; }
void fill(protocol::RetireWorkersReply& b) {
  b = {4, {"mpi://2"}, {{"w0", "no worker of that address or name is connected"}}};
}
void fill(protocol::RebalanceRequest& b) { b = {5, {"inc-1", "inc-2"}, {"w0", "mpi://3"}}; }
void fill(protocol::RebalanceReply& b) { b = {5, 1, 65536, {"inc-2: released or lost meanwhile"}}; }
void fill(protocol::Empty&) {}

/// Payload frames a sample operation of `op` carries, as its sender attaches them.
std::vector<Frame> sample_payload(protocol::Op op) {
  const Frame bytes(std::string_view("12345678"));
  switch (op) {
    case protocol::Op::compute_task:
    case protocol::Op::update_graph:
    case protocol::Op::task_finished:
    case protocol::Op::key_in_memory:
    case protocol::Op::data_reply:
    case protocol::Op::update_data: return {bytes};
    default: return {};
  }
}

void add_sample(BatchWriter& w, protocol::Op op) {
  taskwire::fuzz::visit_body_type(op, [&]<class T>(std::type_identity<T>) {
    T body{};
    fill(body);
    w.add(op, body, sample_payload(op));
  });
}

/// The batch target's input for `m`: the payload-frame count, then frames[0].
std::string batch_input(const Message& m) {
  std::string s(1, static_cast<char>(m.frames.size() - 1));
  s.append(m.frames[0].view());
  return s;
}

/// The stream bytes of `m`: its prefix, then its frames.
std::string stream_bytes(const Message& m) {
  std::vector<char> prefix;
  taskwire::comm::encode_prefix(m, prefix);
  std::string s(prefix.begin(), prefix.end());
  for (const auto& f : m.frames) s.append(f.view());
  return s;
}

struct Seed {
  std::string target, name, bytes;
};

// fuzz_handshake's input: its first byte picks the decoder (0 HELLO, 1 PROOF, 2 VERDICT).
std::string handshake_input(char decoder, const std::vector<char>& message) {
  std::string input(1, decoder);
  return input.append(message.begin(), message.end());
}

void add_handshake_seeds(std::vector<Seed>& seeds) {
  namespace hc = taskwire::comm::handshake_codec;
  hc::Hello hello{taskwire::comm::kProtocolVersion, 19, "worker-1", "worker", {}, true};
  hello.nonce.fill(0x5a);
  seeds.push_back({"handshake", "seed-hello", handshake_input(0, hc::encode_hello(hello))});
  hc::Mac mac;
  mac.fill(0xa5);
  seeds.push_back({"handshake", "seed-proof", handshake_input(1, hc::encode_proof({mac}))});
  seeds.push_back({"handshake", "seed-proof-no-token", handshake_input(1, hc::encode_proof({}))});
  seeds.push_back({"handshake", "seed-accept", handshake_input(2, hc::encode_verdict({true, ""}))});
  seeds.push_back({"handshake", "seed-refuse",
                   handshake_input(2, hc::encode_verdict({false, "a wrong auth token"}))});
}

std::vector<Seed> make_seeds() {
  std::vector<Seed> seeds;
  BatchWriter all;
  for (const auto& [op, name] : taskwire::fuzz::kOperations) {
    std::string header(1, static_cast<char>(op));
    taskwire::fuzz::visit_body_type(op, [&]<class T>(std::type_identity<T>) {
      T body{};
      fill(body);
      const auto encoded = taskwire::fuzz::encode_body(body);
      header.append(encoded.begin(), encoded.end());
    });
    seeds.push_back({"op_header", std::string("seed-") + name, header});
    BatchWriter one;
    add_sample(one, op);
    seeds.push_back({"batch", std::string("seed-") + name, batch_input(one.take())});
    add_sample(all, op);
  }
  const Message every = all.take();
  seeds.push_back({"batch", "seed-every-operation", batch_input(every)});
  seeds.push_back({"framing", "seed-every-operation", stream_bytes(every)});
  seeds.push_back({"framing", "seed-no-frames", stream_bytes(Message{})});
  seeds.push_back({"framing", "seed-empty-frames",
                   stream_bytes(Message({Frame(), Frame(), Frame(std::string_view("x"))}))});
  add_handshake_seeds(seeds);
  return seeds;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "write" && mode != "check") {
    std::fprintf(stderr, "usage: %s write|check CORPUS_DIR\n", argv[0]);
    return 2;
  }
  int stale = 0;
  for (const auto& seed : make_seeds()) {
    const fs::path path = fs::path(argv[2]) / seed.target / seed.name;
    if (mode == "write") {
      fs::create_directories(path.parent_path());
      std::ofstream(path, std::ios::binary) << seed.bytes;
    } else if (!fs::exists(path) || read_file(path) != seed.bytes) {
      std::fprintf(stderr, "stale or missing seed: %s (fuzz_seed_corpus write %s)\n",
                   path.c_str(), argv[2]);
      ++stale;
    }
  }
  return stale == 0 ? 0 : 1;
}
