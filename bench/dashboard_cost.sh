#!/usr/bin/env bash
# What the dashboards cost `taskwire-bench tasks`: RUNS rounds, each running the same
# workloads once with --dashboard off and once with --dashboard on (every dashboard's
# /metrics scraped, and the scheduler's page polled, once a second), the order alternating
# between rounds; with a BASELINE taskwire-bench (e.g. a build without the dashboard code)
# it joins every round too.
# Prints, per workload and variant, the median wall seconds and the median CPU seconds
# (user + sys) of the whole process, and their ratios to `off`.
#   bench/dashboard_cost.sh BENCH [RUNS=15] [BASELINE_BENCH]
set -euo pipefail
bench=$1 runs=${2:-15} baseline=${3:-}
args=(tasks --repeats 1 --independent 50000 --chain 5000 --fan-in 0 --roundtrips 10)
dir=$(mktemp -d /tmp/taskwire-dashcost-XXXXXX)
trap 'rm -rf "$dir"' EXIT
one() {  # one VARIANT EXE [ARGS...]: appends "workload wall" rows and the CPU seconds
  local variant=$1 exe=$2
  shift 2
  /usr/bin/time -f '%U %S' -o "$dir/time" "$exe" "${args[@]}" "$@" --csv "$dir/$variant.csv" >/dev/null
  awk '{ print $1 + $2 }' "$dir/time" >>"$dir/$variant.cpu"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$runs"); do
  variants=(off on)
  [ $((r % 2)) = 0 ] && variants=(on off)
  for v in "${variants[@]}"; do one "$v" "$bench" --dashboard "$v"; done
  [ -z "$baseline" ] || one baseline "$baseline"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-12s %-10s %10s %8s\n' workload variant 'wall s' 'vs off'
for w in independent chain; do
  base=$(grep ",$w," "$dir/off.csv" | cut -d, -f4 | median)
  for v in off on ${baseline:+baseline}; do
    m=$(grep ",$w," "$dir/$v.csv" | cut -d, -f4 | median)
    printf '%-12s %-10s %10.4f %8.3f\n' "$w" "$v" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
  done
done
base=$(median <"$dir/off.cpu")
for v in off on ${baseline:+baseline}; do
  m=$(median <"$dir/$v.cpu")
  printf '%-12s %-10s %10.3f %8.3f  (CPU s of the process)\n' all "$v" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
done
