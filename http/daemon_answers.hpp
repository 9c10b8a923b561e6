#pragma once
// What the scheduler's and a worker's dashboards answer alike: the routes that need none of
// the daemon's state, and /metrics or a /json part once the daemon's facts are rendered.
#include <taskwire/http/dashboard_page.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace taskwire::http {

/// "/health", "/" and unknown paths; nullopt for the routes that need the daemon's facts.
std::optional<HttpResponse> stateless_response(const RoutedRequest& request);

/// /metrics from `metrics` (Prometheus text), else /json/NAME: the whole of `all` for
/// "dashboard", else its member NAME ("task-stream" is `task_stream`).
HttpResponse facts_response(const RoutedRequest& request, std::string metrics,
                            const nlohmann::json& all);

}  // namespace taskwire::http
