#include <taskwire/runtime/batch.hpp>

namespace taskwire::runtime {

void BatchWriter::reset() {
  ar_.reset();
  buf_ = std::make_unique<std::vector<char>>();
  sink_ = std::make_unique<VectorWriteBuffer>(*buf_);
  ar_ = std::make_unique<boost::archive::binary_oarchive>(*sink_, kArchiveFlags);
  payload_.clear();
  ops_ = 0;
}

Message BatchWriter::take() {
  std::uint8_t end = 0;
  *ar_ << end;
  ar_.reset();
  Message m;
  m.frames.reserve(1 + payload_.size());
  m.frames.emplace_back(std::move(*buf_));
  for (auto& f : payload_) m.frames.push_back(std::move(f));
  reset();
  return m;
}

void for_each_op(const Message& message, const std::function<void(OpReader&)>& visit) {
  if (message.frames.empty()) throw SerializationError("empty message: no operation header");
  const Frame& head = message.frames[0];
  const std::span<const Frame> payload(message.frames.data() + 1, message.frames.size() - 1);
  try {
    ReadBuffer buf(head.data(), head.size());
    boost::archive::binary_iarchive ar(buf, kArchiveFlags);
    for (;;) {
      std::uint8_t more = 0, code = 0;
      std::uint32_t first = 0, count = 0;
      ar >> more;
      if (!more) return;
      ar >> code >> first >> count;
      if (std::uint64_t{first} + count > payload.size())
        throw SerializationError("operation refers to payload frames " + std::to_string(first) +
                                 "+" + std::to_string(count) + " of " +
                                 std::to_string(payload.size()));
      OpReader r(ar, static_cast<protocol::Op>(code), payload.subspan(first, count));
      visit(r);
      if (!r.consumed_) throw std::logic_error("operation body not read by its handler");
    }
  } catch (const SerializationError&) {
    throw;
  } catch (const boost::archive::archive_exception& e) {
    throw SerializationError(std::string("malformed operation batch: ") + e.what());
  } catch (const std::ios_base::failure& e) {
    throw SerializationError(std::string("truncated operation batch: ") + e.what());
  }
}

}  // namespace taskwire::runtime
