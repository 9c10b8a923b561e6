// The untyped side of Future and AsCompleted (client/future.hpp): each call goes to the
// key's ClientCore, which their header does not see.
#include <taskwire/client/client_core.hpp>

#include <stdexcept>
#include <utility>

namespace taskwire::client::detail {

const KeyRef& KeyHandle::ref() const {
  if (!ref_)
    throw std::logic_error("taskwire::Future: the future is empty (default-constructed or "
                           "moved from) and refers to no task");
  return *ref_;
}

const std::string& KeyHandle::key() const { return ref().key(); }

runtime::Frame KeyHandle::result() const { return ref().core().result(key()); }

bool KeyHandle::wait(std::optional<std::chrono::milliseconds> timeout) const {
  return ref().core().wait(key(), timeout);
}

KeyStatus KeyHandle::status() const { return ref().core().status(key()); }

void KeyHandle::cancel(bool force) const { ref().core().cancel({key()}, force); }

void KeyHandle::on_done(std::function<void()> callback) const {
  ref().core().on_done(key(), std::move(callback));
}

CompletionQueue::CompletionQueue(std::shared_ptr<ClientCore> core)
    : core_(std::move(core)), completions_(std::make_shared<Completions>()) {}

void CompletionQueue::watch(const std::string& key) { core_->watch(completions_, {key}); }

std::string CompletionQueue::next() { return core_->next_completion(*completions_); }

}  // namespace taskwire::client::detail
