#pragma once
// What the scheduler's and a worker's dashboards answer alike: the routes that need none of
// the daemon's state, and /metrics or a /json part once the daemon's facts are rendered.
#include <taskwire/http/dashboard_page.hpp>
#include <taskwire/http/task_stream.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <string>

namespace taskwire::http {

/// "/health", "/" and unknown paths; nullopt for the routes that need the daemon's facts.
std::optional<HttpResponse> stateless_response(const RoutedRequest& request);

/// /metrics from `metrics` (Prometheus text), else /json/NAME: for "dashboard" the whole of
/// `all` with `stream` as its member task_stream, for "task-stream" `stream`, else `all`'s
/// member NAME. Strings that are not valid UTF-8 get U+FFFD in place of the bad bytes.
HttpResponse facts_response(const RoutedRequest& request, std::string metrics,
                            const nlohmann::json& all, std::span<const TaskStreamEntry> stream);

}  // namespace taskwire::http
