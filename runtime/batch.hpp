#pragma once
// Batches of protocol operations in one message: frames[0] holds, per operation, its Op code,
// which payload frames belong to it, and its body; payload frames follow. Servers batch
// small operations per peer into one message (one write, one read) instead of one each.
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <functional>
#include <memory>
#include <span>

namespace taskwire::runtime {

class BatchWriter {
 public:
  BatchWriter() { reset(); }

  /// Appends an operation; its payload frames are numbered from 0 within `payload`.
  template <class T>
  void add(protocol::Op op, const T& body, std::vector<Frame> payload = {}) {
    std::uint8_t more = 1;
    auto code = static_cast<std::uint8_t>(op);
    auto first = static_cast<std::uint32_t>(payload_.size());
    auto count = static_cast<std::uint32_t>(payload.size());
    *ar_ << more << code << first << count << body;
    for (auto& f : payload) payload_.push_back(std::move(f));
    ++ops_;
  }
  std::size_t size() const noexcept { return ops_; }
  bool empty() const noexcept { return ops_ == 0; }

  /// The message holding every operation added since the last take(); resets the writer.
  Message take();

 private:
  void reset();
  std::unique_ptr<std::vector<char>> buf_;
  std::unique_ptr<VectorWriteBuffer> sink_;
  std::unique_ptr<boost::archive::binary_oarchive> ar_;
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
      ar_ >> value;
    } catch (const std::exception& e) {
      throw SerializationError(std::string("malformed operation body: ") + e.what());
    }
    consumed_ = true;
    return value;
  }

 private:
  friend void for_each_op(const Message&, const std::function<void(OpReader&)>&);
  OpReader(boost::archive::binary_iarchive& ar, protocol::Op op, std::span<const Frame> frames)
      : ar_(ar), op_(op), frames_(frames) {}
  boost::archive::binary_iarchive& ar_;
  protocol::Op op_;
  std::span<const Frame> frames_;
  bool consumed_ = false;
};

/// Calls `visit` for each operation of a batch, in order. `visit` must read the body of each
/// operation (or throw). Throws SerializationError for a malformed batch; operations before
/// the malformed one have been visited.
void for_each_op(const Message& message, const std::function<void(OpReader&)>& visit);

}  // namespace taskwire::runtime
