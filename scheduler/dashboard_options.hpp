#pragma once
// The scheduler's HTTP dashboard settings (SchedulerServerOptions::dashboard).
#include <cstddef>
#include <string>

namespace taskwire::scheduler {

struct DashboardOptions {
  /// Serve the dashboard page, /metrics, /json/... and /health over HTTP. Off by default
  /// for servers made in-process; the taskwire-scheduler daemon turns it on.
  bool enabled = false;
  /// Where: ":8787" (127.0.0.1, this host only), "0.0.0.0:8787" (every interface), port 0
  /// for any free port. A port in use falls back to a free one, with a warning.
  std::string address = ":8787";
  /// Task runs kept for the task stream.
  std::size_t task_stream_length = 5000;
  /// Task errors kept for the page's "recent errors".
  std::size_t recent_errors = 100;
};

}  // namespace taskwire::scheduler
