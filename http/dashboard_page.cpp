#include <taskwire/http/dashboard_page.hpp>

#include <charconv>
#include <cstring>

namespace taskwire::http {

namespace {

// The page: vanilla JS, no framework. It fetches /json/dashboard?since=N every second,
// keeps the last task-stream entries it got, and redraws the tables and the SVG.
constexpr const char* kPage = R"PAGE(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>taskwire dashboard</title>
<style>
body{font-family:sans-serif;margin:12px;color:#222;font-size:13px}
h1{font-size:18px;margin:0 0 6px}h2{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
.bar{display:inline-block;height:12px;vertical-align:middle}
#summary span{margin-right:16px}.err{color:#b00}
svg{border:1px solid #ccc;background:#fafafa}
td.track{text-align:left;width:300px;background:#eee;padding:0;white-space:nowrap;font-size:0}
</style></head><body>
<h1>taskwire <span id="role"></span></h1>
<div id="summary"><span>workers: <b id="nworkers">0</b></span><span>threads: <b id="nthreads">0</b></span>
<span>clients: <b id="nclients">0</b></span><span>tasks completed: <b id="completed">0</b></span>
<span>erred: <b id="erred">0</b></span><span>retried: <b id="retried">0</b></span>
<span>event loop lag: <b id="lag">0</b> ms</span><span id="status"></span></div>
<h2>Workers</h2><table id="workers"><thead><tr><th>worker</th><th>address</th><th>threads</th>
<th>memory</th><th>running</th><th>queued</th><th>keys</th><th>status</th></tr></thead><tbody></tbody></table>
<h2>Task stream</h2><svg id="stream" width="1200" height="60"></svg>
<h2>Progress</h2><table id="progress"><tbody></tbody></table>
<h2>Recent errors</h2><table id="errors"><tbody></tbody></table>
<script>
"use strict";
let since = 0, stream = [];
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));
function colour(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return "hsl(" + (h % 360) + ",60%,55%)";
}
function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
function workers(d) {
  $("workers").tBodies[0].innerHTML = d.workers.map(w =>
    `<tr class="worker" data-address="${esc(w.address)}"><td>${esc(w.name)}</td><td>${esc(w.address)}</td>` +
    `<td>${w.nthreads}</td><td>${bytes(w.memory_bytes)}</td><td>${w.running}</td><td>${w.queued}</td>` +
    `<td>${w.keys}</td><td>${esc(w.status || "running")}</td></tr>`).join("");
}
function progress(d) {
  $("progress").tBodies[0].innerHTML = d.functions.map(f => {
    const t = f.tasks, total = Math.max(1, f.completed + (t.processing || 0) + (t.waiting || 0) +
      (t.queued || 0) + (t["no-worker"] || 0) + (t.released || 0) + (t.erred || 0));
    const w = n => (300 * n / total).toFixed(1);
    return `<tr><td>${esc(f.name)}</td><td class="track"><span class="bar" style="width:${w(f.completed)}px;background:${colour(f.name)}"></span>` +
      `<span class="bar" style="width:${w(t.processing || 0)}px;background:#999"></span>` +
      `<span class="bar" style="width:${w(t.erred || 0)}px;background:#b00"></span></td>` +
      `<td>${f.completed} done</td><td>${t.processing || 0} running</td><td class="err">${f.erred} erred</td></tr>`;
  }).join("");
}
function drawStream(d) {
  const svg = $("stream"), lanes = new Map();
  for (const w of d.workers) for (let i = 0; i < w.nthreads; i++) lanes.set(w.address + "#" + i, lanes.size);
  for (const e of stream) if (!e.transfer && !lanes.has(e.worker + "#" + e.thread)) lanes.set(e.worker + "#" + e.thread, lanes.size);
  const end = stream.reduce((m, e) => Math.max(m, e.stop), d.uptime), begin = end - 10, lh = 14;
  svg.setAttribute("height", Math.max(40, lanes.size * lh + 20));
  const x = t => (1200 * (t - begin) / 10).toFixed(1);
  let s = "";
  for (const [name, i] of lanes) s += `<text x="2" y="${i * lh + 11}" font-size="9" fill="#999">${esc(name)}</text>`;
  for (const e of stream) {
    if (e.stop < begin) continue;
    const lane = e.transfer ? lanes.get(e.worker + "#0") : lanes.get(e.worker + "#" + e.thread);
    if (lane === undefined) continue;
    const w = Math.max(1, x(e.stop) - x(e.start)), fill = e.transfer ? "#d33" : e.erred ? "#000" : colour(e.function);
    s += `<rect x="${x(e.start)}" y="${lane * lh + (e.transfer ? 9 : 1)}" width="${w}" height="${e.transfer ? 3 : 11}" fill="${fill}">` +
      `<title>${esc(e.key)} (${esc(e.function)}) ${((e.stop - e.start) * 1e3).toFixed(2)} ms ${bytes(e.nbytes)}</title></rect>`;
  }
  svg.innerHTML = s;
}
function render(d) {
  $("role").textContent = d.role;
  $("nworkers").textContent = d.workers.length;
  $("nthreads").textContent = d.workers.reduce((n, w) => n + w.nthreads, 0);
  $("nclients").textContent = d.clients;
  $("completed").textContent = d.completed;
  $("erred").textContent = d.erred;
  $("retried").textContent = d.retried;
  $("lag").textContent = (d.loop_lag_seconds * 1e3).toFixed(2);
  workers(d);
  progress(d);
  stream = stream.concat(d.task_stream).slice(-3000);
  since = d.last_seq;
  drawStream(d);
  $("errors").tBodies[0].innerHTML = d.errors.slice().reverse().map(e =>
    `<tr><td>${esc(e.key)}</td><td>${esc(e.function)}</td><td>${esc(e.worker)}</td><td class="err">${esc(e.message)}</td></tr>`).join("");
}
async function poll() {
  try {
    const r = await fetch("/json/dashboard?since=" + since);
    render(await r.json());
    $("status").textContent = "";
  } catch (e) {
    $("status").textContent = "(not answering: " + e + ")";
  }
  setTimeout(poll, 1000);
}
poll();
</script></body></html>
)PAGE";

}  // namespace

RoutedRequest route_of(const HttpRequest& request, std::initializer_list<const char*> json_parts) {
  RoutedRequest routed;
  const std::string path = request.path();
  if (path == "/" || path == "/index.html") routed.route = Route::page;
  else if (path == "/health") routed.route = Route::health;
  else if (path == "/metrics") routed.route = Route::metrics;
  else if (path.rfind("/json/", 0) == 0) {
    const std::string part = path.substr(6);
    for (const char* p : json_parts)
      if (part == p) routed.route = Route::json, routed.part = part;
  }
  const auto q = request.target.find("since=");
  if (q != std::string::npos) {
    const char* begin = request.target.data() + q + 6;
    std::from_chars(begin, request.target.data() + request.target.size(), routed.since);
  }
  return routed;
}

HttpResponse dashboard_page() { return {200, "text/html; charset=utf-8", kPage}; }

HttpResponse plain(unsigned status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

}  // namespace taskwire::http
