#!/usr/bin/env bash
# bench/hosts.sh: taskwire-bench across emulated hosts (tests/hosts/with-hosts), in one run:
# latency and bandwidth (mpi, raw-mpi, tcp, raw-tcp) with one rank on each of h1 and h2, tasks
# and dag (mpi, tcp) with scheduler, client and two workers on h1..h4, one rank per host. MPI
# goes over UCX's TCP transport (UCX_TLS=tcp,self), so every byte crosses the veths. Writes
# OUTDIR/hosts.md (medians, MPI/TCP and taskwire/raw ratios) and, with gnuplot, PNG plots.
#
#   bench/hosts.sh [--quick|--smoke] [--rate RATE] [--bench PATH] [OUTDIR]
#                                                     (OUTDIR: ./benchmark-report/hosts)
#
# --rate: cap every veth (tc tbf), e.g. 10gbit. --smoke: tiny sizes, to prove it works (ctest
# label `hosts`). Needs root and iproute2. Every run is bounded by MPIEXEC_TIMEOUT (default
# 600 s, 120 s smoke) and `timeout`. A run that hangs after writing its CSV (MPICH+UCX over
# TCP may hang in MPI_Finalize, tests/hosts/README.md) is reported, not fatal; a run without
# CSV rows is.
set -euo pipefail

quick=0 rate="" bench="" out=""
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --smoke) quick=2 ;;
    --rate) rate="$2"; shift ;;
    --bench) bench="$2"; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "hosts.sh: unknown option $1" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${TASKWIRE_HOSTS_INSTANCE:-}" ]; then  # bring the hosts up, then run again inside
  exec "$here/tests/hosts/with-hosts" 4 ${rate:+--rate "$rate"} -- "$0" "${args[@]}"
fi
out="${out:-benchmark-report/hosts}"
if [ -z "$bench" ]; then
  bench="${TASKWIRE_BENCH:-}"
  [ -z "$bench" ] && [ -x "$here/build/release/bench/taskwire-bench" ] && bench="$here/build/release/bench/taskwire-bench"
  [ -z "$bench" ] && bench="$(command -v taskwire-bench || true)"
fi
[ -x "$bench" ] || { echo "hosts.sh: taskwire-bench not found (use --bench PATH)" >&2; exit 2; }
bench="$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/*.csv "$out"/*.txt "$out"/*.png "$out"/hosts.md
limit="${MPIEXEC_TIMEOUT:-$([ $quick = 2 ] && echo 120 || echo 600)}"
export MPIEXEC_TIMEOUT="$limit" UCX_TLS=tcp,self

lat_sizes=8,64,4K,64K,1M,16M
bw_sizes=64K,256K,1M,4M,16M,64M
if [ $quick = 2 ]; then
  lat_sizes=8,64K bw_sizes=64K,1M
  lat_args=(--seconds-per-size 0.01 --iterations 20)
  bw_args=(--seconds-per-size 0.01 --min-windows 1)
  tasks_args=(--independent 100 --chain 20 --fan-in 100 --roundtrips 10 --repeats 1)
  dag_args=(--repeats 1 --sizes 1K,64K --stencil-steps 2 --matmul-blocks 2 --tree-leaves 2)
elif [ $quick = 1 ]; then
  lat_sizes=8,64,4K,64K bw_sizes=64K,1M,4M,16M
  lat_args=(--seconds-per-size 0.05 --iterations 500)
  bw_args=(--seconds-per-size 0.1)
  tasks_args=(--repeats 3 --roundtrips 100)
  dag_args=(--repeats 3 --sizes 1K,16K,128K,1M)
else
  lat_args=(--seconds-per-size 0.4)
  bw_args=(--seconds-per-size 0.5)
  tasks_args=(--repeats 3)
  dag_args=(--repeats 5)
fi

notes=()
# run NAME HOSTS N ARGS...: taskwire-bench ARGS with one rank on each of HOSTS, output in
# OUTDIR/NAME.txt; its CSV must have rows.
run() {
  local name="$1" hosts="$2" n="$3" rc=0
  shift 3
  local cmd=(mpiexec.mpich -launcher ssh -launcher-exec "$TASKWIRE_HOSTS_DIR/netns-ssh"
             -iface "$TASKWIRE_HOSTS_BRIDGE" -hosts "$hosts" -n "$n" "$bench" "$@" --csv "$out/$name.csv")
  echo "== ${cmd[*]}" | tee "$out/$name.txt"
  timeout -k 10 $((limit + 30)) "${cmd[@]}" 2>&1 | tee -a "$out/$name.txt" || rc=$?
  [ "$(wc -l < "$out/$name.csv" 2>/dev/null || echo 0)" -ge 2 ] ||
    { echo "hosts.sh: $name wrote no CSV rows (exit $rc)" >&2; exit 1; }
  [ $rc = 0 ] || notes+=("$name: mpiexec ended with status $rc after writing its CSV")
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
run latency h1,h2 2 latency -b mpi,raw-mpi,tcp,raw-tcp --sizes "$lat_sizes" "${lat_args[@]}"
run bandwidth h1,h2 2 bandwidth -b mpi,raw-mpi,tcp,raw-tcp --sizes "$bw_sizes" "${bw_args[@]}"
run tasks h1,h2,h3,h4 4 tasks -b mpi,tcp "${tasks_args[@]}"
run dag h1,h2,h3,h4 4 dag -b mpi,tcp "${dag_args[@]}"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# ratio CSV KEYCOLS VALCOL NUM DEN: rows "key num den num/den" for keys both backends have
# (column 1 is the backend; KEYCOLS the columns naming a row, e.g. "2" or "2,3").
ratio() {
  awk -F, -v keys="$2" -v v="$3" -v a="$4" -v b="$5" '
    NR == 1 { next }
    { n = split(keys, k, ","); key = $(k[1]); for (i = 2; i <= n; i++) key = key " " $(k[i]) }
    $1 == a { num[key] = $v; if (!(key in seen)) { seen[key] = 1; order[++m] = key } }
    $1 == b { den[key] = $v }
    END { for (i = 1; i <= m; i++) { key = order[i]; if (key in den && den[key] > 0)
            printf "| %s | %.4g | %.4g | %.2f |\n", key, num[key], den[key], num[key] / den[key] } }' "$1"
}
table() {  # table TITLE CSV KEYCOLS VALCOL NUM DEN
  printf '\n### %s\n\n| row | %s | %s | %s/%s |\n|---|---|---|---|\n' "$1" "$5" "$6" "$5" "$6"
  ratio "$2" "$3" "$4" "$5" "$6"
}
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }  # column number of NAME

lat_med="$(col "$out/latency.csv" p50_us)"
bw_med="$(col "$out/bandwidth.csv" gb_per_s)"
tasks_med="$(col "$out/tasks.csv" tasks_per_s)"
dag_med="$(col "$out/dag.csv" seconds)"
{
  echo "# taskwire-bench across emulated hosts"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown);"
  echo "load average before $load_before, after $load_after; UCX_TLS=$UCX_TLS; link rate ${rate:-uncapped}."
  echo "latency, bandwidth: ranks on h1, h2; tasks, dag: scheduler h1, client h2, workers h3, h4."
  table "Round trip (median us): taskwire mpi / raw MPI" "$out/latency.csv" 2 "$lat_med" mpi raw-mpi
  table "Round trip (median us): taskwire tcp / raw TCP" "$out/latency.csv" 2 "$lat_med" tcp raw-tcp
  table "Round trip (median us): MPI / TCP" "$out/latency.csv" 2 "$lat_med" mpi tcp
  table "Bandwidth (median GB/s): taskwire mpi / raw MPI" "$out/bandwidth.csv" 2 "$bw_med" mpi raw-mpi
  table "Bandwidth (median GB/s): taskwire tcp / raw TCP" "$out/bandwidth.csv" 2 "$bw_med" tcp raw-tcp
  table "Tasks (median tasks/s): MPI / TCP" "$out/tasks.csv" 2 "$tasks_med" mpi tcp
  table "Task graphs (median s per graph): MPI / TCP (below 1: MPI faster)" "$out/dag.csv" 2,3 "$dag_med" mpi tcp
  if [ ${#notes[@]} -gt 0 ]; then echo; echo "Notes:"; printf -- '- %s\n' "${notes[@]}"; fi
} > "$out/hosts.md"

if command -v gnuplot >/dev/null; then
  for name in latency bandwidth; do
    v=$([ $name = latency ] && echo "$lat_med" || echo "$bw_med")
    plots=""
    for b in $(tail -n +2 "$out/$name.csv" | cut -d, -f1 | awk '!seen[$0]++'); do
      awk -F, -v b="$b" -v v="$v" '$1 == b { print $2, $v }' "$out/$name.csv" > "$out/$name-$b.dat"
      plots+="${plots:+, }'$out/$name-$b.dat' using 1:2 with linespoints lw 2 title '$b'"
    done
    gnuplot <<EOF
set terminal pngcairo size 800,500
set output '$out/hosts-$name.png'
set title '$name across two emulated hosts (UCX_TLS=tcp,self, rate ${rate:-uncapped}), medians'
set logscale x 2
set xlabel 'message bytes'
set ylabel '$([ $name = latency ] && echo 'round trip, us' || echo 'GB/s')'
$([ $name = latency ] && echo 'set logscale y')
set key left top
plot $plots
EOF
    rm -f "$out/$name"-*.dat
    echo "![$name](hosts-$name.png)" >> "$out/hosts.md"
  done
fi
cat "$out/hosts.md"
