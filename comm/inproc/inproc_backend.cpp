#include <taskwire/comm/inproc/inproc_backend.hpp>
#include <taskwire/comm/inproc/inproc_comm.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

namespace taskwire::comm::inproc {
namespace {

struct Entry {
  asio::any_io_executor executor;
  RawAcceptHandler on_comm;
  std::uint64_t max_queued_bytes;  ///< the listener's context's bound, for its comms' writes
};

// The process-wide inproc namespace (see inproc_backend.hpp for why it is global).
class Router {
 public:
  static Router& instance() {
    static Router r;
    return r;
  }
  bool add(const std::string& name, std::shared_ptr<Entry> e) {
    std::lock_guard lock(mu_);
    return entries_.emplace(name, std::move(e)).second;
  }
  void remove(const std::string& name, const Entry* e) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it != entries_.end() && it->second.get() == e) entries_.erase(it);
  }
  std::shared_ptr<Entry> find(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : it->second;
  }
  std::string unique_name() { return fmt::format("auto-{}-{}", ::getpid(), ++counter_); }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::atomic<unsigned long> counter_{0};
};

class InprocConnector final : public Connector {
 public:
  InprocConnector(asio::any_io_executor ex, std::uint64_t max_queued_bytes)
      : executor_(std::move(ex)), max_queued_bytes_(max_queued_bytes) {}
  void async_connect(const Address& address, RawConnectHandler handler) override {
    auto entry = Router::instance().find(address.location);
    if (!entry) {
      asio::post(executor_, [h = std::move(handler)] { h(make_error_code(errc::refused), nullptr); });
      return;
    }
    static std::atomic<unsigned long> n{0};
    const auto client_name = fmt::format("inproc://client-{}", ++n);
    auto client =
        std::make_shared<InprocComm>(executor_, client_name, address.str(), max_queued_bytes_);
    auto server = std::make_shared<InprocComm>(entry->executor, address.str(), client_name,
                                               entry->max_queued_bytes);
    InprocComm::link(client, server);
    asio::post(entry->executor, [entry, server] { entry->on_comm(server); });
    asio::post(executor_, [h = std::move(handler), client] { h({}, client); });
  }

 private:
  asio::any_io_executor executor_;
  std::uint64_t max_queued_bytes_;
};

class InprocListener final : public Listener {
 public:
  InprocListener(asio::any_io_executor ex, std::string name, RawAcceptHandler on_comm,
                 std::uint64_t max_queued_bytes)
      : name_(name == "auto" ? Router::instance().unique_name() : std::move(name)),
        entry_(std::make_shared<Entry>(Entry{std::move(ex), std::move(on_comm), max_queued_bytes})) {}
  ~InprocListener() override { stop(); }
  void start() override {
    if (!Router::instance().add(name_, entry_))
      throw CommError(make_error_code(errc::io),
                      fmt::format("inproc://{} is already in use by another listener", name_));
    started_ = true;
  }
  void stop() noexcept override {
    if (started_) Router::instance().remove(name_, entry_.get());
    started_ = false;
  }
  std::string listen_address() const override { return "inproc://" + name_; }
  std::string contact_address() const override { return "inproc://" + name_; }

 private:
  std::string name_;
  std::shared_ptr<Entry> entry_;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<Connector> InprocBackend::make_connector() {
  return std::make_unique<InprocConnector>(context_.executor(),
                                           context_.config().limits.max_queued_bytes);
}

std::unique_ptr<Listener> InprocBackend::make_listener(const Address& address,
                                                       RawAcceptHandler on_comm,
                                                       const RawListenOptions&) {
  return std::make_unique<InprocListener>(context_.executor(), address.location,
                                          std::move(on_comm),
                                          context_.config().limits.max_queued_bytes);
}

}  // namespace taskwire::comm::inproc
