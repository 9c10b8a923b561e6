#include <taskwire/http/daemon_answers.hpp>

#include <taskwire/http/prometheus_text.hpp>
#include <taskwire/http/task_stream_json.hpp>

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
                            const nlohmann::json& all, std::span<const TaskStreamEntry> stream) {
  if (request.route == Route::metrics)
    return {200, std::string(kPrometheusContentType), std::move(metrics)};
  const auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string body;
  if (request.part == "task-stream") {
    append_task_stream_json(body, stream);
  } else if (request.part == "dashboard") {
    body = all.is_object() ? dump(all) : "{}";
    body.pop_back();  // the object's '}': the task stream goes in before it
    body += body.size() > 1 ? R"(,"task_stream":)" : R"("task_stream":)";
    append_task_stream_json(body, stream);
    body += '}';
  } else {
    body = dump(all.at(request.part));
  }
  return {200, "application/json", std::move(body)};
}

}  // namespace taskwire::http
