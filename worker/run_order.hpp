#pragma once
// RunOrder: which of a worker's queued tasks runs (or is fetched) first.
#include <fmt/format.h>

#include <compare>
#include <cstdint>

namespace taskwire::worker {

/// Higher `user` first (SubmitOptions::priority, Dask's semantics), then lower `order` (the
/// client's submission order, protocol::TaskSpec::priority).
struct RunOrder {
  std::int32_t user = 0;
  std::int64_t order = 0;
  friend bool operator==(const RunOrder&, const RunOrder&) = default;
  friend std::strong_ordering operator<=>(const RunOrder& a, const RunOrder& b) {
    if (a.user != b.user) return b.user <=> a.user;
    return a.order <=> b.order;
  }
};

}  // namespace taskwire::worker

template <>
struct fmt::formatter<taskwire::worker::RunOrder> : fmt::formatter<std::string_view> {
  auto format(const taskwire::worker::RunOrder& p, fmt::format_context& ctx) const {
    if (p.user == 0) return fmt::format_to(ctx.out(), "{}", p.order);
    return fmt::format_to(ctx.out(), "{} (user {})", p.order, p.user);
  }
};
