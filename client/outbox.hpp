#pragma once
// What a client has queued for its scheduler, as a sequence of messages that each stay under
// the comm limits: an operation that would take the current message past them starts the next
// one, so operations keep their order. Each message remembers the keys whose submission it
// carries, so that a message that cannot be sent fails their futures instead of leaving them
// pending. Not thread-safe: ClientCore guards it with its out_mu_.
#include <taskwire/runtime/batch.hpp>
#include <taskwire/runtime/config.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::client {

class Outbox {
 public:
  struct Outgoing {
    runtime::Message message;
    std::vector<std::string> carried_keys;  ///< submitted in this message
  };

  explicit Outbox(runtime::Limits limits = {}) : limits_(limits) {}
  void set_limits(const runtime::Limits& limits) { limits_ = limits; }

  /// Appends an operation (see runtime::BatchWriter::add); `carried_keys` are the keys it
  /// submits. An operation alone past the limits gets a message of its own.
  template <class T>
  void add(protocol::Op op, const T& body, std::vector<runtime::Frame> payload = {},
           std::vector<std::string> carried_keys = {}) {
    std::uint64_t bytes = 0;
    for (const auto& f : payload) bytes += f.size();
    if (!current_.empty() && !fits(payload.size(), bytes)) seal();
    frames_ += payload.size();
    bytes_ += bytes;
    current_.add(op, body, std::move(payload));
    if (carried_.empty()) carried_ = std::move(carried_keys);
    else carried_.insert(carried_.end(), carried_keys.begin(), carried_keys.end());
  }
  bool empty() const noexcept { return sealed_.empty() && current_.empty(); }
  /// Every queued message, in order; empties the outbox.
  std::vector<Outgoing> take();

 private:
  bool fits(std::uint64_t frames, std::uint64_t bytes) const {
    return 1 + frames_ + frames <= limits_.max_frames &&
           bytes_ + bytes <= limits_.max_message_bytes / 2;  // half: room for the header
  }
  void seal();

  runtime::Limits limits_;
  std::vector<Outgoing> sealed_;
  runtime::BatchWriter current_;
  std::vector<std::string> carried_;
  std::uint64_t frames_ = 0, bytes_ = 0;  // payload of current_
};

}  // namespace taskwire::client
