// The dashboard's building blocks: the HTTP server's limits and routes, the Prometheus text
// writer, the task-stream ring.
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/http/daemon_answers.hpp>
#include <taskwire/http/dashboard_page.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/http/prometheus_text.hpp>
#include <taskwire/http/task_stream.hpp>
#include <taskwire/http/task_stream_json.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/scheduler/scheduler_dashboard.hpp>
#include <taskwire/worker/worker_dashboard.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace taskwire;
namespace bhttp = boost::beast::http;

namespace {

// One request to 127.0.0.1:port; the status (0 when the server closed without a reply).
unsigned get(unsigned short port, const std::string& target, const std::string& header = "",
             std::string* body = nullptr) {
  asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(20));
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target, 11);
  if (!header.empty()) request.set("X-Big", header);
  bhttp::write(stream, request);
  boost::beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  error_code ec;
  bhttp::read(stream, buffer, response, ec);
  if (ec) return 0;
  if (body) *body = response.body();
  return response.result_int();
}

http::HttpHandler echo_handler() {
  return [](const http::HttpRequest& r, http::HttpRespond respond) {
    if (r.path() == "/echo") return respond(http::plain(200, r.target));
    respond(http::plain(404, "not found\n"));
  };
}

}  // namespace

TEST_CASE("http: a dashboard address parses as Dask's --dashboard-address") {
  CHECK(http::parse_listen_address(":8787").host == "127.0.0.1");
  CHECK(http::parse_listen_address(":8787").port == 8787);
  CHECK(http::parse_listen_address("8787").port == 8787);
  CHECK(http::parse_listen_address("8787").host == "127.0.0.1");
  CHECK(http::parse_listen_address("0.0.0.0:0").host == "0.0.0.0");
  CHECK(http::parse_listen_address("[::1]:80").host == "::1");
  CHECK(http::parse_listen_address("10.1.2.3").port == 0);
  CHECK_THROWS_AS(http::parse_listen_address(":99999"), std::invalid_argument);
  CHECK_THROWS_AS(http::parse_listen_address(":80x"), std::invalid_argument);
}

TEST_CASE("http: the server answers, refuses oversized headers and unknown paths") {
  runtime::Context ctx;
  ctx.start();
  http::HttpServer server(ctx.executor(), {}, echo_handler());
  server.start();
  std::string body;
  CHECK(get(server.port(), "/echo?x=1", "", &body) == 200);
  CHECK(body == "/echo?x=1");
  CHECK(get(server.port(), "/elsewhere") == 404);
  CHECK(get(server.port(), "/echo", std::string(20'000, 'a')) == 431);
  CHECK(get(server.port(), "/echo", std::string(100, 'a')) == 200);
  server.stop();
  ctx.stop();
}

TEST_CASE("http: past the connection cap the oldest connection makes room, so slow clients "
          "holding every slot do not keep a request out") {
  runtime::Context ctx;
  ctx.start();
  http::HttpServerOptions options;
  options.max_connections = 8;
  http::HttpServer server(ctx.executor(), options, echo_handler());
  server.start();
  // Three times the cap of slowloris clients: each sends part of a request and waits (the
  // request timeout, 10 s, would close them only then).
  asio::io_context io;
  std::vector<asio::ip::tcp::socket> slow;
  for (int i = 0; i < 24; ++i) {
    slow.emplace_back(io);
    slow.back().connect({asio::ip::make_address("127.0.0.1"), server.port()});
    asio::write(slow.back(), asio::buffer(std::string_view("GET /echo HTTP/1.1\r\nX-a: b\r\n")));
  }
  int answered = 0;
  for (int i = 0; i < 20; ++i) answered += get(server.port(), "/echo") == 200;
  CHECK(answered == 20);
  // The oldest slow client was closed to make room, unanswered.
  char byte = 0;
  error_code ec;
  CHECK(asio::read(slow.front(), asio::buffer(&byte, 1), ec) == 0);
  CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
  server.stop();
  ctx.stop();
}

TEST_CASE("http: a port in use falls back to a free one, or fails when told not to") {
  runtime::Context ctx;
  ctx.start();
  asio::ip::tcp::acceptor taken(ctx.io(), {asio::ip::make_address("127.0.0.1"), 0});
  http::HttpServerOptions o;
  o.port = taken.local_endpoint().port();
  http::HttpServer fallback(ctx.executor(), o, echo_handler());
  fallback.start();
  CHECK(fallback.port() != o.port);
  CHECK(get(fallback.port(), "/echo") == 200);
  o.fall_back_to_free_port = false;
  http::HttpServer strict(ctx.executor(), o, echo_handler());
  CHECK_THROWS_AS(strict.start(), boost::system::system_error);
  fallback.stop();
  ctx.stop();
}

TEST_CASE("http: routes of the dashboard") {
  auto route = [](const std::string& target) {
    return http::route_of({"GET", target}, {"dashboard", "workers"});
  };
  CHECK(route("/").route == http::Route::page);
  CHECK(route("/health").route == http::Route::health);
  CHECK(route("/metrics?x").route == http::Route::metrics);
  CHECK(route("/json/workers").part == "workers");
  CHECK(route("/json/dashboard?since=42").since == 42);
  CHECK(route("/json/other").route == http::Route::not_found);
  CHECK(route("/nope").route == http::Route::not_found);
}

TEST_CASE("http: Prometheus text escapes label values and writes cumulative buckets") {
  http::PrometheusText p;
  p.family("x_total", "counter", "help with \\ backslash");
  p.sample("x_total", 3, {{"function", "say \"hi\"\n"}});
  runtime::DurationHistogram h;
  h.observe(2e-5);
  h.observe(0.5);
  h.observe(1e6);
  p.family("d_seconds", "histogram", "durations");
  p.histogram("d_seconds", h);
  const std::string text = p.take();
  CHECK(text.find("# HELP x_total help with \\\\ backslash\n") != std::string::npos);
  CHECK(text.find("x_total{function=\"say \\\"hi\\\"\\n\"} 3\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"1e-05\"} 0\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"3e-05\"} 1\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"1\"} 2\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("d_seconds_count 3\n") != std::string::npos);
}

TEST_CASE("http: the task stream keeps the newest entries and packs lanes") {
  http::TaskStream stream(4);
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) keys.push_back("k" + std::to_string(i));
  for (int i = 0; i < 6; ++i)
    stream.record_task({.key = keys[i], .function = "f", .worker = "w", .nthreads = 2,
                        .start = double(i), .stop = i + 1.5, .nbytes = 8});
  CHECK(stream.last_seq() == 6);
  auto all = stream.since(0);
  REQUIRE(all.size() == 4);
  CHECK(all.front().key == "k2");
  CHECK(all.back().key == "k5");
  // Runs of 1.5 s starting every second overlap: they alternate between the two lanes.
  CHECK(all[0].lane != all[1].lane);
  auto newer = stream.since(4);
  REQUIRE(newer.size() == 2);
  CHECK(newer[0].seq == 5);
  CHECK(stream.since(6).empty());
  stream.record_transfer("k9", "tcp://peer", 1, 2, 100);
  CHECK(stream.since(6).at(0).transfer);
}

TEST_CASE("http: a task's lane is the thread its worker named, its transfer time kept") {
  http::TaskStream stream(8);
  // Overlapping runs that name their threads keep them, whatever a guess would give.
  stream.record_task({.key = "a", .function = "f", .worker = "w", .nthreads = 4, .thread = 3,
                      .start = 0, .stop = 2, .transfer_seconds = 0.25});
  stream.record_task({.key = "b", .function = "f", .worker = "w", .nthreads = 4, .thread = 3,
                      .start = 3, .stop = 4});
  // Out of range (inline on the event loop): a free lane is guessed.
  stream.record_task({.key = "c", .function = "f", .worker = "w", .nthreads = 4, .thread = 9,
                      .start = 5, .stop = 6});
  const auto all = stream.since(0);
  REQUIRE(all.size() == 3);
  CHECK(all[0].lane == 3);
  CHECK(all[0].transfer_seconds == 0.25);
  CHECK(all[1].lane == 3);
  CHECK(all[1].transfer_seconds == 0);
  CHECK(all[2].lane >= 0);
  CHECK(all[2].lane < 4);
}

TEST_CASE("http: the scheduler's task stream takes at most one poll's worth of tasks a second") {
  scheduler::DashboardRecorder recorder{scheduler::DashboardOptions{}};
  const protocol::TaskFinished task;
  std::size_t taken = 0;
  for (std::size_t i = 0; i < http::kStreamEntriesPerPoll + 500; ++i)
    taken += recorder.records(task, 10.0 + 0.0001 * static_cast<double>(i)) ? 1 : 0;
  CHECK(taken == http::kStreamEntriesPerPoll);
  CHECK(recorder.unrecorded() == 500);
  protocol::TaskFinished fetched;  // its dependencies came from a peer: always shown
  fetched.transfer_bytes = 1;
  CHECK(recorder.records(fetched, 10.9));
  CHECK(recorder.records(task, 11.5));  // a new second
  CHECK(recorder.unrecorded() == 500);
  // An error is recorded whatever the rate.
  recorder.task_erred("w", 1, "k", "f", "boom", 11.6);
  REQUIRE(recorder.errors().size() == 1);
  CHECK(recorder.stream().last_seq() == 1);
}

TEST_CASE("http: a stream's rate takes one poll's worth a second, from the first entry's time") {
  http::StreamRate rate;
  for (std::size_t i = 0; i < http::kStreamEntriesPerPoll; ++i) REQUIRE(rate.admits(5.0));
  CHECK_FALSE(rate.admits(5.5));
  CHECK_FALSE(rate.admits(5.999));
  CHECK(rate.admits(5.999, true));  // an error or a run with transfers: shown whatever the rate
  CHECK(rate.unrecorded() == 2);
  CHECK(rate.admits(6.0));  // a new second from the first one's start
  CHECK(rate.unrecorded() == 2);
}

TEST_CASE("http: a worker's task stream leaves out runs past its rate, never errors or transfers") {
  worker::WorkerDashboardRecorder recorder(5000, 10);
  const worker::TaskRun plain;
  const std::size_t runs = http::kStreamEntriesPerPoll + 100;
  for (std::size_t i = 0; i < runs; ++i)
    recorder.task_done("w", 1, "k", "f", 0.0, 8, plain, nullptr, 3.0);
  CHECK(recorder.unrecorded() == 100);
  CHECK(recorder.stream().last_seq() == http::kStreamEntriesPerPoll);
  // Past the rate, in the same second: an error and runs whose dependencies came from a peer
  // (by time or by bytes) still get entries.
  const std::string boom = "boom";
  recorder.task_done("w", 1, "bad", "f", 0.0, 0, plain, &boom, 3.5);
  worker::TaskRun fetched;
  fetched.transfer_start = 1.0;
  fetched.transfer_stop = 1.5;
  recorder.task_done("w", 1, "fetched", "f", 0.0, 8, fetched, nullptr, 3.5);
  worker::TaskRun fetched_fast;
  fetched_fast.transfer_bytes = 64;
  recorder.task_done("w", 1, "fetched-fast", "f", 0.0, 8, fetched_fast, nullptr, 3.5);
  recorder.task_done("w", 1, "left-out", "f", 0.0, 8, plain, nullptr, 3.5);
  const auto entries = recorder.stream().since(http::kStreamEntriesPerPoll);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].erred);
  CHECK(entries[1].key == "fetched");
  CHECK(entries[1].transfer_seconds == 0.5);
  CHECK(entries[2].key == "fetched-fast");
  CHECK(recorder.unrecorded() == 101);
  // The counts count every run.
  CHECK(recorder.functions().at("f").completed == runs + 3);
  CHECK(recorder.functions().at("f").erred == 1);
}

TEST_CASE("http: task-stream JSON escapes any key and reads back as written") {
  http::TaskStream stream(10);
  const std::string awkward = std::string("a\"b\\c\nd") + '\x01' + "\xff\xfe-end";
  stream.record_task({.key = awkward, .function = "f\"n", .worker = "tcp://w:1", .nthreads = 2,
                      .thread = 1, .start = 0.125, .stop = 2.5e-7, .nbytes = 42});
  stream.record_transfer("k2", "tcp://w:1", 1.0, std::numeric_limits<double>::infinity(), 7);
  std::string out = "x";
  http::append_task_stream_json(out, stream.since(0));
  REQUIRE(out.front() == 'x');
  const auto json = nlohmann::json::parse(out.substr(1));
  REQUIRE(json.size() == 2);
  const auto& a = json[0];
  CHECK(a["seq"] == 1);
  CHECK(a["key"].get<std::string>().rfind(std::string("a\"b\\c\nd") + '\x01', 0) == 0);
  CHECK(a["key"].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  CHECK(a["function"] == "f\"n");
  CHECK(a["worker"] == "tcp://w:1");
  CHECK(a["thread"] == 1);
  CHECK(a["start"] == 0.125);
  CHECK(a["stop"] == 2.5e-7);
  CHECK(a["nbytes"] == 42);
  CHECK(a["erred"] == false);
  CHECK(a["transfer"] == false);
  const auto& b = json[1];
  CHECK(b["key"] == "k2");
  CHECK(b["function"] == "transfer");
  CHECK(b["stop"].is_null());
  CHECK(b["transfer"] == true);
  std::string empty;
  http::append_task_stream_json(empty, {});
  CHECK(empty == "[]");
}

TEST_CASE("http: a /json reply puts the task stream in the dashboard and survives bad UTF-8") {
  http::TaskStream stream(10);
  stream.record_task({.key = "k", .function = "f", .worker = "w", .start = 1, .stop = 2});
  const nlohmann::json all = {{"role", "scheduler"},
                              {"errors", nlohmann::json::array({{{"message", "bad \xff byte"}}})}};
  const auto entries = stream.since(0);
  const auto reply = [&](const char* part) {
    return http::facts_response({.route = http::Route::json, .part = part}, {}, all, entries);
  };
  const auto dashboard = nlohmann::json::parse(reply("dashboard").body);
  CHECK(dashboard["role"] == "scheduler");
  REQUIRE(dashboard["task_stream"].size() == 1);
  CHECK(dashboard["task_stream"][0]["key"] == "k");
  CHECK(dashboard["errors"][0]["message"] == "bad \xef\xbf\xbd byte");
  CHECK(nlohmann::json::parse(reply("task-stream").body).size() == 1);
  CHECK(nlohmann::json::parse(reply("errors").body).size() == 1);
  const auto alone = http::facts_response({.route = http::Route::json, .part = "dashboard"}, {},
                                          nlohmann::json::object(), entries);
  CHECK(nlohmann::json::parse(alone.body)["task_stream"].size() == 1);
  const auto metrics =
      http::facts_response({.route = http::Route::metrics, .part = ""}, "m 1\n", {}, {});
  CHECK(metrics.body == "m 1\n");
}

TEST_CASE("http: both dashboards' /metrics carry the backends' counters, read through the "
          "registry") {
  runtime::Context context;
  comm::Registry empty(context);
  CHECK(empty.counters().empty());
  comm::Registry registry(context);
  comm::register_builtin_backends(registry);  // mpi:// counts its poll drivers' turns and sleeps
  const auto counters = registry.counters();
  std::vector<std::string> names;
  for (const auto& c : counters) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"mpi_poll_turns_total", "mpi_poll_sleeps_total",
                                          "mpi_poll_wakeups_by_peer_total",
                                          "mpi_poll_wakeups_by_timer_total",
                                          "mpi_poll_wakeups_local_total"});
  const http::RoutedRequest metrics{.route = http::Route::metrics, .part = ""};
  scheduler::SchedulerFacts scheduler_facts;
  scheduler_facts.backend_counters = counters;
  const auto from_scheduler = scheduler::render(scheduler_facts, metrics).body;
  CHECK(from_scheduler.find("# TYPE taskwire_scheduler_mpi_poll_turns_total counter") !=
        std::string::npos);
  worker::WorkerFacts worker_facts;
  worker_facts.backend_counters = counters;
  const auto from_worker = worker::render(worker_facts, metrics).body;
  CHECK(from_worker.find("# TYPE taskwire_worker_mpi_poll_sleeps_total counter") !=
        std::string::npos);
}

TEST_CASE("http: the scheduler's /json and /metrics show a retiring worker as such",
          "[retirement]") {
  scheduler::SchedulerFacts facts;
  facts.workers.push_back({.address = "tcp://a:1", .name = "a"});
  facts.workers.push_back({.address = "tcp://b:1", .name = "b", .paused = true});
  facts.workers.push_back({.address = "tcp://c:1", .name = "c", .retiring = true});
  facts.tasks.workers_retired = 2;
  const auto json = nlohmann::json::parse(
      scheduler::render(facts, {.route = http::Route::json, .part = "workers"}).body);
  REQUIRE(json.size() == 3);
  CHECK(json[0]["status"] == "running");
  CHECK(json[1]["status"] == "paused");
  CHECK(json[2]["status"] == "retiring");
  const auto metrics = scheduler::render(facts, {.route = http::Route::metrics, .part = ""}).body;
  CHECK_THAT(metrics, Catch::Contains("\ntaskwire_scheduler_workers_retiring 1\n"));
  CHECK_THAT(metrics, Catch::Contains("\ntaskwire_scheduler_workers_retired_total 2\n"));
  CHECK_THAT(http::dashboard_page().body, Catch::Contains("<th>status</th>"));
}
