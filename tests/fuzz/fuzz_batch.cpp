// Fuzz target: the batch reader (runtime/batch.cpp, for_each_op) over a message as the
// scheduler, a worker or a client receives it, each operation's body read as its reader reads
// it. Input: one byte, the number of payload frames, then frames[0] (the batch header).
// Invariants: a malformed batch throws SerializationError (or the readers' own refusal of an
// unknown op) and nothing else; each operation's frames lie within the message's payload; a
// batch read whole, written again with BatchWriter, reads back as the same operations with
// the same bodies and the same payload frames.
#include "fuzz_support.hpp"

#include <taskwire/runtime/batch.hpp>

#include <cstdint>
#include <stdexcept>

namespace {

namespace protocol = taskwire::protocol;
using taskwire::runtime::BatchWriter;
using taskwire::runtime::Frame;
using taskwire::runtime::Message;
using taskwire::runtime::OpReader;

/// What the readers throw for an op code they do not handle.
struct UnknownOperation : std::runtime_error {
  UnknownOperation() : std::runtime_error("unknown operation") {}
};

struct ReadOperation {
  protocol::Op op;
  std::vector<char> body;     ///< re-encoded
  std::vector<Frame> frames;  ///< shared with the message, not copied
};

Message message_of(const std::uint8_t* bytes, std::size_t size) {
  Message message;
  message.frames.emplace_back(std::vector<char>(bytes + 1, bytes + size));
  for (unsigned i = 0; i < bytes[0]; ++i)  // each payload frame holds its index
    message.frames.emplace_back(std::vector<char>{static_cast<char>(i)});
  return message;
}

void check_frames_within(const OpReader& r, const Message& message) {
  const Frame* first_payload = message.frames.data() + 1;
  const Frame* end = message.frames.data() + message.frames.size();
  TASKWIRE_FUZZ_CHECK(r.frames().empty() ||
                      (r.frames().data() >= first_payload && r.frames().data() < end &&
                       r.frames().size() <= static_cast<std::size_t>(end - r.frames().data())));
}

/// Reads every operation of `message` as its reader would, writing each to `rewritten`.
std::vector<ReadOperation> read_all(const Message& message, BatchWriter& rewritten) {
  std::vector<ReadOperation> read;
  taskwire::runtime::for_each_op(message, [&](OpReader& r) {
    check_frames_within(r, message);
    const bool known = taskwire::fuzz::visit_body_type(r.op(), [&]<class T>(std::type_identity<T>) {
      const T body = r.body<T>();
      std::vector<Frame> frames(r.frames().begin(), r.frames().end());
      rewritten.add(r.op(), body, frames);
      read.push_back({r.op(), taskwire::fuzz::encode_body(body), std::move(frames)});
    });
    if (!known) throw UnknownOperation();  // as every reader does
  });
  return read;
}

void check_reads_back(const std::vector<ReadOperation>& expected, const Message& message) {
  std::size_t at = 0;
  taskwire::runtime::for_each_op(message, [&](OpReader& r) {
    TASKWIRE_FUZZ_CHECK(at < expected.size());
    const auto& want = expected[at++];
    TASKWIRE_FUZZ_CHECK(r.op() == want.op);
    TASKWIRE_FUZZ_CHECK(r.frames().size() == want.frames.size());
    for (std::size_t i = 0; i < want.frames.size(); ++i)
      TASKWIRE_FUZZ_CHECK(r.frames()[i].data() == want.frames[i].data());
    taskwire::fuzz::visit_body_type(r.op(), [&]<class T>(std::type_identity<T>) {
      TASKWIRE_FUZZ_CHECK(taskwire::fuzz::encode_body(r.body<T>()) == want.body);
    });
  });
  TASKWIRE_FUZZ_CHECK(at == expected.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 1) return 0;
  const Message message = message_of(bytes, size);
  BatchWriter rewritten;
  std::vector<ReadOperation> read;
  try {
    read = read_all(message, rewritten);
  } catch (const taskwire::runtime::SerializationError&) {
    return 0;  // refused: the reader closes that connection
  } catch (const UnknownOperation&) {
    return 0;
  }
  check_reads_back(read, rewritten.take());
  return 0;
}
