#include <taskwire/runtime/resources.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace taskwire::runtime {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Amounts compare after sums and differences of doubles: a use that is back to what it was
// must not look a hair above it.
constexpr double kSlack = 1e-9;

}  // namespace

void check_resources(const Resources& resources, std::string_view what) {
  for (const auto& [name, amount] : resources) {
    if (name.empty()) throw std::invalid_argument(fmt::format("{}: a resource without a name", what));
    if (!(amount > 0) || !std::isfinite(amount))
      throw std::invalid_argument(
          fmt::format("{}: resource '{}' has amount {}; amounts are positive numbers", what,
                      name, amount));
  }
}

Resources parse_resources(std::string_view text, std::string_view what) {
  Resources out;
  while (!trimmed(text).empty()) {
    const auto comma = text.find(',');
    const std::string_view item = trimmed(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const auto eq = item.find('=');
    const std::string name(trimmed(item.substr(0, eq)));
    const std::string value(eq == std::string_view::npos ? "" : trimmed(item.substr(eq + 1)));
    char* end = nullptr;
    const double amount = value.empty() ? NAN : std::strtod(value.c_str(), &end);
    if (name.empty() || value.empty() || *end != '\0')
      throw std::invalid_argument(fmt::format(
          "{}: '{}' is not NAME=AMOUNT (e.g. \"GPU=2,MEM=64e9\")", what, std::string(item)));
    if (!out.emplace(name, amount).second)
      throw std::invalid_argument(fmt::format("{}: resource '{}' given twice", what, name));
  }
  check_resources(out, what);
  return out;
}

std::string format_resources(const Resources& resources) {
  if (resources.empty()) return "none";
  std::string text;
  for (const auto& [name, amount] : resources)
    text += fmt::format("{}{}={}", text.empty() ? "" : ", ", name, amount);
  return text;
}

bool resources_fit(const Resources& need, const Resources& total, const Resources& used) {
  for (const auto& [name, amount] : need) {
    const auto have = total.find(name);
    if (have == total.end()) return false;
    const auto in_use = used.find(name);
    const double free = have->second - (in_use == used.end() ? 0.0 : in_use->second);
    if (amount > free + kSlack * std::max(1.0, have->second)) return false;
  }
  return true;
}

void account_resources(Resources& used, const Resources& need, int sign) {
  for (const auto& [name, amount] : need) {
    auto [it, added] = used.try_emplace(name, 0.0);
    it->second += sign * amount;
    if (std::abs(it->second) <= kSlack * std::max(1.0, amount)) used.erase(it);
  }
}

}  // namespace taskwire::runtime
