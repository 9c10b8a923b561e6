#include <taskwire/comm/core/registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace taskwire::comm {

void Registry::add(std::unique_ptr<Backend> backend) {
  std::string scheme(backend->scheme());
  backends_[scheme] = std::move(backend);
}

Backend* Registry::find(std::string_view scheme) const noexcept {
  auto it = backends_.find(scheme);
  return it == backends_.end() ? nullptr : it->second.get();
}

Backend& Registry::get(std::string_view scheme) const {
  if (auto* b = find(scheme)) return *b;
  throw CommError(make_error_code(errc::unknown_scheme),
                  fmt::format("no comm backend for scheme '{}://'; known schemes: {}", scheme,
                              fmt::join(schemes(), ", ")));
}

std::vector<std::string> Registry::schemes() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : backends_) out.push_back(k);
  return out;
}

std::vector<BackendCounter> Registry::counters() const {
  std::vector<BackendCounter> out;
  for (const auto& [scheme, backend] : backends_) {
    auto more = backend->counters();
    out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return out;
}

}  // namespace taskwire::comm
