#include <taskwire/runtime/batch.hpp>
#include <taskwire/runtime/trace.hpp>

#include <utility>

namespace taskwire::runtime {

void BatchWriter::note_queued(protocol::Op op) noexcept { trace::record(trace::What::queued, op); }

Message BatchWriter::take() {
  wire::Writer(buf_) << std::uint8_t{0};
  Message m;
  m.frames.reserve(1 + payload_.size());
  m.frames.emplace_back(std::exchange(buf_, {}));
  for (auto& f : payload_) m.frames.push_back(std::move(f));
  payload_.clear();
  ops_ = 0;
  return m;
}

void for_each_op(const Message& message, const std::function<void(OpReader&)>& visit) {
  if (message.frames.empty()) throw SerializationError("empty message: no operation header");
  const Frame& head = message.frames[0];
  const std::span<const Frame> payload(message.frames.data() + 1, message.frames.size() - 1);
  wire::Reader in(head.data(), head.size());  // throws SerializationError on bad bytes
  for (;;) {
    std::uint8_t more = 0, code = 0;
    std::uint32_t first = 0, count = 0;
    in >> more;
    if (!more) return;
    in >> code >> first >> count;
    if (std::uint64_t{first} + count > payload.size())
      throw SerializationError("operation refers to payload frames " + std::to_string(first) +
                               "+" + std::to_string(count) + " of " +
                               std::to_string(payload.size()));
    OpReader r(in, static_cast<protocol::Op>(code), payload.subspan(first, count));
    trace::record(trace::What::received, static_cast<protocol::Op>(code));
    visit(r);
    if (!r.consumed_) throw std::logic_error("operation body not read by its handler");
  }
}

}  // namespace taskwire::runtime
