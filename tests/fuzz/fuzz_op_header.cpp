// Fuzz target: the operation-header codec (runtime/wire_codec.hpp) for the body of every
// operation a reader dispatches on. Input: one byte, the op code, then the body's bytes.
// Invariants: malformed bytes throw SerializationError and nothing else; a decoded body
// re-encodes to no more bytes than it was read from, to exactly those bytes when the format
// has one encoding per value, and to an encoding that decodes and re-encodes to itself.
#include "fuzz_support.hpp"

#include <taskwire/runtime/serialize.hpp>

#include <cstdint>
#include <algorithm>

namespace {

namespace protocol = taskwire::protocol;
using taskwire::runtime::wire::Reader;

// Bodies whose encoding is not unique: a bool is read from any byte (written as 0 or 1),
// and a map's keys may come in any order, or twice (written once, sorted). A TaskSpec
// (update_graph, compute_task) has both since protocol version 9; acquire_replicas is a map;
// missing_data and get_data end with a bool since protocol version 20.
template <class T>
constexpr bool has_one_encoding =
    !std::is_same_v<T, protocol::RegisterWorker> && !std::is_same_v<T, protocol::ComputeTask> &&
    !std::is_same_v<T, protocol::SchedulerInfo> && !std::is_same_v<T, protocol::CancelKeys> &&
    !std::is_same_v<T, protocol::StealResponse> && !std::is_same_v<T, protocol::UpdateGraph> &&
    !std::is_same_v<T, protocol::WorkerStatus> && !std::is_same_v<T, protocol::CloseWorker> &&
    !std::is_same_v<T, protocol::AcquireReplicas> && !std::is_same_v<T, protocol::MissingData> &&
    !std::is_same_v<T, protocol::GetData>;

template <class T>
void fuzz_body(const char* data, std::size_t n) {
  T body{};
  Reader in(data, n);
  try {
    in >> body;
  } catch (const taskwire::runtime::SerializationError&) {
    return;  // refused: what a reader does with a malformed header
  }
  const std::size_t consumed = n - in.remaining();
  const auto once = taskwire::fuzz::encode_body(body);
  TASKWIRE_FUZZ_CHECK(once.size() <= consumed);
  if constexpr (has_one_encoding<T>)
    TASKWIRE_FUZZ_CHECK(once.size() == consumed && std::equal(once.begin(), once.end(), data));

  T again{};
  Reader reread(once.data(), once.size());
  reread >> again;  // must not throw: it is the writer's own output
  TASKWIRE_FUZZ_CHECK(reread.remaining() == 0);
  TASKWIRE_FUZZ_CHECK(taskwire::fuzz::encode_body(again) == once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 1) return 0;
  const auto op = static_cast<protocol::Op>(bytes[0]);
  const auto* body = reinterpret_cast<const char*>(bytes) + 1;
  taskwire::fuzz::visit_body_type(
      op, [&]<class T>(std::type_identity<T>) { fuzz_body<T>(body, size - 1); });
  return 0;
}
