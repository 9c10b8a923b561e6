#pragma once
#include <stdexcept>
#include <string>

namespace taskwire {

/// A task failed (it threw, its function is unknown, a dependency failed, it was cancelled,
/// or the workers running it died). Thrown by Future::get() and Client::gather().
///
/// When a worker reported the failure, the error says where: what() reads
///   task 'f-3' raised std::invalid_argument on worker w2: bad input
///   task 'g-4' failed: dependency 'f-3' raised std::invalid_argument on worker w2: bad input
/// and exception_type(), worker() and worker_address() say it apart.
class TaskError : public std::runtime_error {
 public:
  /// Where a failure reported by a worker came from (all fields may be empty).
  struct Origin {
    std::string raised_by;       ///< the task that failed: the key itself, or a dependency
    std::string cause;           ///< what raised_by raised (its exception's what())
    std::string exception_type;  ///< demangled, e.g. "std::invalid_argument"; empty: no throw
    std::string worker;          ///< the name of the worker that ran raised_by
    std::string worker_address;  ///< its contact address
  };

  /// A failure no worker reported (cancelled, lost, refused...): what() is
  /// "task KEY failed: MESSAGE".
  TaskError(std::string key, std::string message)
      : std::runtime_error("task " + key + " failed: " + message), key_(std::move(key)),
        message_(std::move(message)) {}
  /// A failure a worker reported; `message` is the scheduler's text ("dependency 'K' failed:
  /// ..." for a dependent).
  TaskError(std::string key, std::string message, Origin origin)
      : std::runtime_error(describe(key, message, origin)), key_(std::move(key)),
        message_(std::move(message)), origin_(std::move(origin)) {}

  const std::string& key() const noexcept { return key_; }
  const std::string& message() const noexcept { return message_; }  ///< the original text
  /// The demangled type of what the task threw; empty if it threw nothing or it is unknown.
  const std::string& exception_type() const noexcept { return origin_.exception_type; }
  /// The name of the worker the failing task ran on; empty if unknown.
  const std::string& worker() const noexcept { return origin_.worker; }
  const std::string& worker_address() const noexcept { return origin_.worker_address; }
  /// The task that failed: key() itself or a dependency; empty if unknown.
  const std::string& raised_by() const noexcept { return origin_.raised_by; }
  /// What raised_by() raised (its exception's what()); empty if unknown.
  const std::string& cause() const noexcept { return origin_.cause; }

 private:
  static std::string describe(const std::string& key, const std::string& message,
                              const Origin& o) {
    if (o.worker.empty()) return "task " + key + " failed: " + message;
    const bool own = o.raised_by.empty() || o.raised_by == key;
    std::string text = own ? "task '" + key + "'" : "task '" + key + "' failed: dependency '" +
                                                        o.raised_by + "'";
    text += o.exception_type.empty() ? " failed" : " raised " + o.exception_type;
    return text + " on worker " + o.worker + ": " + (own ? message : o.cause);
  }

  std::string key_, message_;
  Origin origin_;
};

}  // namespace taskwire
