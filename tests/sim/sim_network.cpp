#include "sim_network.hpp"

#include <algorithm>
#include <limits>

namespace taskwire::sim {

void Network::send(const std::string& from, const std::string& to, std::vector<Payload> ops,
                   double delay) {
  if (ops.empty()) return;
  Channel& c = channels_[{from, to}];
  const double due = std::max({now_ + delay, c.last_due, c.stalled_until});
  c.last_due = due;
  c.queue.push_back(Envelope{from, to, due, false, false, std::move(ops)});
}

void Network::post(const std::string& to, Payload p, double delay, bool timer) {
  std::vector<Payload> ops;
  ops.push_back(std::move(p));
  local_.push_back(Envelope{to, to, now_ + delay, true, timer, std::move(ops)});
}

void Network::stall(const std::string& from, const std::string& to, double until) {
  Channel& c = channels_[{from, to}];
  c.stalled_until = std::max(c.stalled_until, until);
  for (Envelope& e : c.queue) e.due = std::max(e.due, until);
  c.last_due = std::max(c.last_due, until);
}

void Network::cut_from(const std::string& endpoint, Rng* rng) {
  for (auto& [ends, c] : channels_) {
    if (!rng || ends.first != endpoint || c.queue.empty()) continue;
    c.queue.resize(rng->below(c.queue.size() + 1));
  }
  std::erase_if(local_, [&](const Envelope& e) { return e.to == endpoint; });
}

std::optional<Envelope> Network::take_due(Rng& rng) {
  // Candidates: the head of each channel, and every local item, that is due.
  std::vector<Channel*> heads;
  std::vector<std::size_t> locals;
  for (auto& [ends, c] : channels_)
    if (!c.queue.empty() && c.queue.front().due <= now_) heads.push_back(&c);
  for (std::size_t i = 0; i < local_.size(); ++i)
    if (local_[i].due <= now_) locals.push_back(i);
  const std::size_t n = heads.size() + locals.size();
  if (n == 0) return std::nullopt;
  const std::size_t pick = rng.below(n);
  if (pick < heads.size()) {
    Envelope e = std::move(heads[pick]->queue.front());
    heads[pick]->queue.pop_front();
    return e;
  }
  const std::size_t i = locals[pick - heads.size()];
  Envelope e = std::move(local_[i]);
  local_.erase(local_.begin() + static_cast<std::ptrdiff_t>(i));
  return e;
}

std::optional<Envelope> Network::next(Rng& rng) {
  if (auto e = take_due(rng)) return e;
  double earliest = std::numeric_limits<double>::infinity();
  for (auto it = channels_.begin(); it != channels_.end();) {
    if (it->second.queue.empty() && it->second.stalled_until <= now_) {
      it = channels_.erase(it);  // delivered items were due by now: FIFO needs no memory
      continue;
    }
    if (!it->second.queue.empty()) earliest = std::min(earliest, it->second.queue.front().due);
    ++it;
  }
  for (const Envelope& e : local_) earliest = std::min(earliest, e.due);
  if (earliest == std::numeric_limits<double>::infinity()) return std::nullopt;
  now_ = std::max(now_, earliest + rng.uniform(0, jitter_));
  return take_due(rng);
}

bool Network::busy() const {
  for (const auto& [ends, c] : channels_)
    if (!c.queue.empty()) return true;
  return std::any_of(local_.begin(), local_.end(), [](const Envelope& e) { return !e.timer; });
}

std::vector<std::pair<std::string, std::string>> Network::active_channels() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [ends, c] : channels_)
    if (!c.queue.empty()) out.push_back(ends);
  return out;
}

std::size_t Network::pending() const {
  std::size_t n = local_.size();
  for (const auto& [ends, c] : channels_) n += c.queue.size();
  return n;
}

}  // namespace taskwire::sim
