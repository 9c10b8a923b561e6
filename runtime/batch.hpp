#pragma once
// Batches of protocol operations in one message: frames[0] holds, per operation, its Op code,
// which payload frames belong to it, and its body; payload frames follow. Servers batch
// small operations per peer into one message (one write, one read) instead of one each.
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/runtime/wire_codec.hpp>

#include <functional>
#include <memory>
#include <span>

namespace taskwire::runtime {

// The header's layout (wire_codec.hpp): per operation a 1 byte, its Op code, the index of its
// first payload frame and their number (uint32 each), then its body; a 0 byte ends it.
class BatchWriter {
 public:
  /// Appends an operation; its payload frames are numbered from 0 within `payload`.
  template <class T>
  void add(protocol::Op op, const T& body, std::vector<Frame> payload = {}) {
    if (buf_.capacity() == 0) buf_.reserve(kInitialBytes);
    std::uint8_t more = 1;
    auto code = static_cast<std::uint8_t>(op);
    auto first = static_cast<std::uint32_t>(payload_.size());
    auto count = static_cast<std::uint32_t>(payload.size());
    wire::Writer(buf_) << more << code << first << count << body;
    for (auto& f : payload) payload_.push_back(std::move(f));
    ++ops_;
    note_queued(op);
  }
  std::size_t size() const noexcept { return ops_; }
  bool empty() const noexcept { return ops_ == 0; }

  /// The message holding every operation added since the last take(); resets the writer.
  Message take();

 private:
  /// For TASKWIRE_TRACE (runtime/trace.hpp, not installed: defined in batch.cpp).
  static void note_queued(protocol::Op op) noexcept;
  static constexpr std::size_t kInitialBytes = 256;
  std::vector<char> buf_;
  std::vector<Frame> payload_;
  std::size_t ops_ = 0;
};

/// One operation read out of a batch.
class OpReader {
 public:
  protocol::Op op() const noexcept { return op_; }
  /// The operation's payload frames.
  std::span<const Frame> frames() const noexcept { return frames_; }
  template <class T>
  T body() {
    T value{};
    try {
      in_ >> value;
    } catch (const std::exception& e) {
      throw SerializationError(std::string("malformed operation body: ") + e.what());
    }
    consumed_ = true;
    return value;
  }

 private:
  friend void for_each_op(const Message&, const std::function<void(OpReader&)>&);
  OpReader(wire::Reader& in, protocol::Op op, std::span<const Frame> frames)
      : in_(in), op_(op), frames_(frames) {}
  wire::Reader& in_;
  protocol::Op op_;
  std::span<const Frame> frames_;
  bool consumed_ = false;
};

/// Calls `visit` for each operation of a batch, in order. `visit` must read the body of each
/// operation (or throw). Throws SerializationError for a malformed batch; operations before
/// the malformed one have been visited.
void for_each_op(const Message& message, const std::function<void(OpReader&)>& visit);

}  // namespace taskwire::runtime
