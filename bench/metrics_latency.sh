#!/usr/bin/env bash
# How long the scheduler's /metrics (and /json/dashboard) take to answer while it holds many
# tasks: a scheduler without workers, a client that submits N tasks (they wait for a worker),
# then `curl` times R scrapes of each. Prints the median and the largest time_total.
#   bench/metrics_latency.sh SCHEDULER_EXE DASHBOARD_CLIENT [N=100000] [R=50]
# (DASHBOARD_CLIENT: build/release/tests/http/dashboard_client; its `hold` mode submits.)
set -euo pipefail
scheduler=$1 client=$2 n=${3:-100000} rounds=${4:-50}
dir=$(mktemp -d /tmp/taskwire-metrics-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
"$scheduler" --listen tcp://127.0.0.1:0 --dashboard-address 127.0.0.1:0 \
  --scheduler-file "$dir/s.json" >"$dir/scheduler.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do grep -q "dashboard at" "$dir/scheduler.log" && break; sleep 0.1; done
url=$(grep -oE 'dashboard at http://[0-9.]+:[0-9]+' "$dir/scheduler.log" | head -n 1 | sed 's/dashboard at //')
"$client" hold "$dir/s.json" "$n" >"$dir/client.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 1200); do
  held=$(curl -sf "$url/metrics" | awk '/^taskwire_scheduler_tasks\{/ { s += $2 } END { print s + 0 }')
  [ "$held" -ge "$n" ] && break
  sleep 0.1
done
echo "scheduler holds $held tasks"
stats() {  # stats PATH: median and max of R curl time_total, in ms
  for _ in $(seq 1 "$rounds"); do
    curl -sf -o /dev/null -w '%{time_total}\n' "$url$1"
  done | sort -n | awk -v p="$1" '{ v[NR] = $1 * 1000 } END {
    printf "%-16s median %.2f ms, max %.2f ms over %d requests\n", p, v[int((NR + 1) / 2)], v[NR], NR }'
}
stats /health
stats /metrics
stats "/json/dashboard"
stats /metrics
curl -sf "$url/metrics" | grep -E '^taskwire_scheduler_tasks\{' || true
touch "$dir/s.json.go"
wait "${pids[1]}" || true
