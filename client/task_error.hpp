#pragma once
#include <stdexcept>
#include <string>

namespace taskwire {

/// A task failed (it threw, its function is unknown, a dependency failed, it was cancelled,
/// or the workers running it died). Thrown by Future::get() and Client::gather().
class TaskError : public std::runtime_error {
 public:
  TaskError(std::string key, std::string message)
      : std::runtime_error("task " + key + " failed: " + message), key_(std::move(key)),
        message_(std::move(message)) {}
  const std::string& key() const noexcept { return key_; }
  const std::string& message() const noexcept { return message_; }  ///< the original text

 private:
  std::string key_, message_;
};

}  // namespace taskwire
