#include <taskwire/http/daemon_answers.hpp>

#include <taskwire/http/prometheus_text.hpp>

namespace taskwire::http {

std::optional<HttpResponse> stateless_response(const RoutedRequest& request) {
  switch (request.route) {
    case Route::health: return plain(200, "ok\n");
    case Route::page: return dashboard_page();
    case Route::not_found: return plain(404, "not found\n");
    default: return std::nullopt;
  }
}

HttpResponse facts_response(const RoutedRequest& request, std::string metrics,
                            const nlohmann::json& all) {
  if (request.route == Route::metrics)
    return {200, std::string(kPrometheusContentType), std::move(metrics)};
  const std::string key = request.part == "task-stream" ? "task_stream" : request.part;
  const nlohmann::json& part = request.part == "dashboard" ? all : all.at(key);
  return {200, "application/json", part.dump()};
}

}  // namespace taskwire::http
