#pragma once
// comm::Registry: the backends available to one runtime::Context, by URL scheme. An owned
// object filled explicitly (comm/backends.hpp registers the built-in ones); no static
// self-registration. Not thread-safe while being filled; read-only use afterwards is.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/context.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::comm {

class Registry {
 public:
  explicit Registry(runtime::Context& context) : context_(context) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Adds a backend; replaces one already registered for the same scheme.
  void add(std::unique_ptr<Backend> backend);
  /// Throws CommError(unknown_scheme) listing the known schemes.
  Backend& get(std::string_view scheme) const;
  Backend* find(std::string_view scheme) const noexcept;
  std::vector<std::string> schemes() const;
  /// Every backend's counters (Backend::counters), in scheme order. Thread-safe once filled.
  std::vector<BackendCounter> counters() const;
  runtime::Context& context() const noexcept { return context_; }

 private:
  runtime::Context& context_;
  std::map<std::string, std::unique_ptr<Backend>, std::less<>> backends_;
};

}  // namespace taskwire::comm
