#pragma once
// The dashboard's routes and its one page, shared by the scheduler and the workers. The
// page is embedded in the binary (no file, no CDN): plain HTML, JS and SVG that polls
// /json/dashboard about once a second.
#include <taskwire/http/http_server.hpp>

#include <cstdint>
#include <string>

namespace taskwire::http {

enum class Route {
  page,        ///< "/": the dashboard
  health,      ///< "/health"
  metrics,     ///< "/metrics": Prometheus text
  json,        ///< "/json/dashboard", "/json/workers", "/json/tasks", ...: `part` names it
  not_found,
};

struct RoutedRequest {
  Route route = Route::not_found;
  std::string part;          ///< for json: "dashboard", "workers", "tasks", "task-stream", ...
  std::uint64_t since = 0;   ///< ?since=N: task-stream entries after N
};

/// Routes a request; `json_parts` lists the names /json/NAME accepts (others: not_found).
RoutedRequest route_of(const HttpRequest& request, std::initializer_list<const char*> json_parts);

/// "/" (text/html).
HttpResponse dashboard_page();
HttpResponse plain(unsigned status, std::string body);

}  // namespace taskwire::http
