#!/usr/bin/env bash
# bench/report.sh: runs every taskwire-bench subcommand with --csv into one directory, then
# writes OUTDIR/report.md: the tables, the MPI/TCP ratios, and PNG plots made with gnuplot
# (latency and bandwidth vs message size, task throughput per workload, task graphs that move
# data: time per graph against payload size), and TaskBench's METG(50%) (bench/metg.sh) when
# taskwire-taskbench was built next to taskwire-bench.
#
#   bench/report.sh [--quick|--smoke] [--hosts] [--bench PATH] [OUTDIR]
#                                                           (OUTDIR: ./benchmark-report)
#
# --quick: short time budgets and a smaller array (N = 4000), about a minute in all.
# --smoke: tiny sizes, only to prove the pipeline works (the `bench` ctest label runs it).
# --hosts: also the same benchmarks across 4 emulated hosts (bench/hosts.sh into OUTDIR/hosts,
#   a section of report.md); needs root and iproute2 (tests/hosts/README.md).
# --bench: the taskwire-bench binary (default: $TASKWIRE_BENCH, build/release/bench/, then PATH).
# Every MPI run goes through mpiexec.mpich with MPIEXEC_TIMEOUT (default 900 s, 240 s quick).
# Exits non-zero when a benchmark fails or leaves no CSV rows. Needs gnuplot for the plots
# (Debian: gnuplot-nox, in third_party/install-deps.sh); without it the report has no images.
set -euo pipefail

quick=0
hosts=0
bench=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --smoke) quick=2 ;;
    --hosts) hosts=1 ;;
    --bench) bench="$2"; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "report.sh: unknown option $1" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${out:-benchmark-report}"
# The tree's state before this run writes anything (OUTDIR may be tracked, as docs/ is).
source_state="commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
if [ -z "$bench" ]; then
  bench="${TASKWIRE_BENCH:-}"
  [ -z "$bench" ] && [ -x "$here/build/release/bench/taskwire-bench" ] && bench="$here/build/release/bench/taskwire-bench"
  [ -z "$bench" ] && bench="$(command -v taskwire-bench || true)"
fi
[ -x "$bench" ] || { echo "report.sh: taskwire-bench not found (use --bench PATH)" >&2; exit 2; }
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.txt "$out"/*.dat "$out"/*.png "$out"/report.md
export MPIEXEC_TIMEOUT="${MPIEXEC_TIMEOUT:-$([ $quick = 0 ] && echo 900 || echo 240)}"

lat_sizes=8,64,512,4K,32K,256K,2M,16M,64M
bw_sizes=64K,256K,1M,4M,16M,64M
if [ $quick = 2 ]; then
  lat_sizes=8,64K bw_sizes=64K,1M
  lat_args=(--seconds-per-size 0.01 --iterations 20)
  bw_args=(--seconds-per-size 0.01 --min-windows 1)
  tasks_args=(--independent 200 --chain 50 --fan-in 500 --roundtrips 20 --repeats 1)
  relay_args=(--roundtrips 200 --repeats 1)
  array_args=(--n 400 --blocks 4)
  dag_args=(--repeats 1 --sizes 1K,64K --stencil-steps 2 --matmul-blocks 2 --tree-leaves 2)
  metg_args=(--quick --steps 10 --iters "4096 16")
  idle_args=(--seconds 0.3 --settle 0.1)
elif [ $quick = 1 ]; then
  lat_args=(--seconds-per-size 0.05 --iterations 500)
  bw_args=(--seconds-per-size 0.1)
  tasks_args=(--repeats 3 --roundtrips 100)  # medians of 3, even when quick
  relay_args=(--roundtrips 5000 --repeats 3)
  array_args=(--n 4000 --blocks 8)
  dag_args=(--repeats 3 --sizes 1K,16K,128K,1M)
  metg_args=(--quick)
  idle_args=(--seconds 2 --settle 0.5)
else
  lat_args=(--seconds-per-size 0.4)
  bw_args=(--seconds-per-size 0.5)
  tasks_args=(--repeats 3)
  relay_args=(--roundtrips 20000 --repeats 3)
  array_args=(--n 20000 --blocks 8)
  dag_args=(--repeats 5)
  metg_args=(--steps 500)
  idle_args=(--seconds 5 --settle 1)
fi

commands=()
# run NAME CMD...: runs CMD with its output in OUTDIR/NAME.txt (and on the terminal), then
# checks that OUTDIR/NAME.csv has rows.
run() {
  local name="$1"; shift
  commands+=("$*")
  echo "== $name: $*"
  if ! "$@" 2>&1 | tee "$out/$name.txt"; then echo "report.sh: $name failed" >&2; exit 1; fi
  [ "$(wc -l < "$out/$name.csv" 2>/dev/null || echo 0)" -ge 2 ] || { echo "report.sh: $name wrote no CSV rows" >&2; exit 1; }
}

load_before="$(uptime)"
started=$(date +%s)
run latency mpiexec.mpich -n 2 "$bench" latency -b mpi,raw-mpi,tcp,raw-tcp \
  --sizes "$lat_sizes" "${lat_args[@]}" --csv "$out/latency.csv"
run bandwidth mpiexec.mpich -n 2 "$bench" bandwidth -b mpi,raw-mpi,tcp,raw-tcp --sizes "$bw_sizes" "${bw_args[@]}" --csv "$out/bandwidth.csv"
run tasks mpiexec.mpich -n 4 "$bench" tasks -b mpi,tcp "${tasks_args[@]}" --csv "$out/tasks.csv"
run relay "$bench" relay "${relay_args[@]}" --csv "$out/relay.csv"
run array mpiexec.mpich -n 5 "$bench" array -b mpi,tcp "${array_args[@]}" --csv "$out/array.csv"
run dag mpiexec.mpich -n 4 "$bench" dag -b mpi,tcp "${dag_args[@]}" --csv "$out/dag.csv"
# TaskBench's METG(50%), when the driver was built (a task-bench checkout was found)
taskbench_dir="$(dirname "$bench")/../taskbench"
metg=0
if [ -x "$taskbench_dir/taskwire-taskbench" ] && [ -x "$taskbench_dir/taskbench-mpi-nonblock" ]; then
  run metg "$here/bench/metg.sh" "${metg_args[@]}" --csv "$out/metg.csv" \
    --nonblock "$taskbench_dir/taskbench-mpi-nonblock" --taskbench "$taskbench_dir/taskwire-taskbench"
  metg=1
fi
run idle mpiexec.mpich -n 4 "$bench" idle -b mpi,tcp "${idle_args[@]}" --csv "$out/idle.csv"
load_after="$(uptime)"
elapsed=$(( $(date +%s) - started ))

# ---- plots -------------------------------------------------------------------------------
backends_of() { tail -n +2 "$1" | cut -d, -f1 | awk '!seen[$0]++'; }
# per-backend data files: OUTDIR/NAME-BACKEND.dat with "x y" lines
split_dat() {
  local csv="$1" name="$2" xcol="$3" ycol="$4"
  awk -F, -v out="$out" -v name="$name" -v x="$xcol" -v y="$ycol" \
    'NR > 1 { print $x, $y > (out "/" name "-" $1 ".dat") }' "$csv"
}
plot_lines() {  # NAME TITLE YLABEL LOGY
  local name="$1" title="$2" ylabel="$3" logy="$4" plots="" b
  for b in $(backends_of "$out/$name.csv"); do
    plots+="${plots:+, }'$out/$name-$b.dat' using 1:2 with linespoints lw 2 title '$b'"
  done
  gnuplot <<EOF
set terminal $term size 900,560
set output '$out/$name.png'
set title '$title'
set xlabel 'message size (bytes)'
set ylabel '$ylabel'
set logscale x 2
$( [ "$logy" = 1 ] && echo "set logscale y 10" )
set format x '%.0b%B'
set grid
set key top left
plot $plots
EOF
}
plots=0
if command -v gnuplot >/dev/null; then
  term=pngcairo
  gnuplot -e 'set terminal pngcairo' 2>/dev/null || term=png
  split_dat "$out/latency.csv" latency 2 4
  split_dat "$out/bandwidth.csv" bandwidth 2 5
  plot_lines latency "Round-trip latency (p50), rank 0 <-> rank 1" "p50 round trip (us)" 1
  plot_lines bandwidth "One-way bandwidth, rank 0 -> rank 1" "GB/s" 0
  # tasks: one cluster of bars per workload, one bar per backend (tasks per second)
  tb=($(backends_of "$out/tasks.csv"))
  awk -F, -v bs="${tb[*]}" 'NR > 1 { v[$2 "," $1] = $5; if (!($2 in seen)) { seen[$2]; order[++n] = $2 } }
    END { split(bs, b, " "); printf "workload"; for (j = 1; j in b; ++j) printf " %s", b[j]; print "";
          for (i = 1; i <= n; ++i) { printf "%s", order[i]; for (j = 1; j in b; ++j) printf " %s", v[order[i] "," b[j]]; print "" } }' \
    "$out/tasks.csv" > "$out/tasks.dat"
  gnuplot <<EOF
set terminal $term size 900,560
set output '$out/tasks.png'
set title 'Task throughput (mpiexec.mpich -n 4: scheduler, client, 2 single-thread workers)'
set ylabel 'tasks per second'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top right autotitle columnhead
set yrange [0:*]
plot for [i=2:$(( ${#tb[@]} + 1 ))] '$out/tasks.dat' using i:xtic(1)
EOF
  # dag: one panel per workload, time against payload size, mpi next to tcp
  awk -F, -v out="$out" 'NR > 1 { print $3, $5 * 1e3 > (out "/dag-" $2 "-" $1 ".dat") }' "$out/dag.csv"
  dag_panels=""
  for w in $(tail -n +2 "$out/dag.csv" | cut -d, -f2 | awk '!seen[$0]++'); do
    lines=""
    for b in $(backends_of "$out/dag.csv"); do
      lines+="${lines:+, }'$out/dag-$w-$b.dat' using 1:2 with linespoints lw 2 title '$b'"
    done
    dag_panels+="set title '$w'"$'\n'"plot $lines"$'\n'
  done
  gnuplot <<EOF
set terminal $term size 1000,760
set output '$out/dag.png'
set multiplot layout 2,2 title 'Task graphs that move data (mpiexec.mpich -n 4, medians): time per graph'
set xlabel 'payload per task result (bytes)'
set ylabel 'ms'
set logscale x 2
set logscale y 10
set format x '%.0b%B'
set grid
set key top left
$dag_panels
unset multiplot
EOF
  rm -f "$out"/*.dat
  for p in latency bandwidth tasks dag; do
    [ -s "$out/$p.png" ] || { echo "report.sh: gnuplot made no $p.png" >&2; exit 1; }
  done
  plots=4
fi

# ---- report.md -----------------------------------------------------------------------------
# pivot CSV KEYCOL LABEL VALCOL FMT COLS...: one row per key (first-seen order), one column
# per backend, then ratio columns given as "a/b".
pivot() {
  local csv="$1" key="$2" label="$3" val="$4" fmt="$5"; shift 5
  awk -F, -v key="$key" -v label="$label" -v val="$val" -v fmt="$fmt" -v cols="$*" '
    function human(n) { if (label != "size") return n;
      if (n >= 1048576 && n % 1048576 == 0) return (n / 1048576) " MiB";
      if (n >= 1024 && n % 1024 == 0) return (n / 1024) " KiB"; return n " B" }
    NR > 1 { v[$key "|" $1] = $val; if (!($key in seen)) { seen[$key]; order[++n] = $key } }
    END { nc = split(cols, c, " "); printf "| %s |", label;
      for (j = 1; j <= nc; ++j) printf " %s |", c[j]; print "";
      printf "|---|"; for (j = 1; j <= nc; ++j) printf "---:|"; print "";
      for (i = 1; i <= n; ++i) { k = order[i]; printf "| %s |", human(k);
        for (j = 1; j <= nc; ++j) { if (split(c[j], ab, "/") == 2) {
            a = v[k "|" ab[1]]; b = v[k "|" ab[2]];
            if (a != "" && b != "" && b + 0 != 0) printf " %.2f |", a / b; else printf " - |" }
          else if ((k "|" c[j]) in v) printf " " fmt " |", v[k "|" c[j]]; else printf " - |" }
        print "" } }' "$csv"
}
csv_table() {  # the CSV as a Markdown table
  awk -F, 'NR == 1 { h = "|"; s = "|"; for (i = 1; i <= NF; ++i) { h = h " " $i " |"; s = s "---|" } print h; print s; next }
    { r = "|"; for (i = 1; i <= NF; ++i) r = r " " $i " |"; print r }' "$1"
}
ratio_line() {  # CSV KEYCOL VALCOL A B: "A/B = x" for a single-valued table
  awk -F, -v k="$2" -v c="$3" -v a="$4" -v b="$5" 'NR > 1 && $k == a { x = $c } NR > 1 && $k == b { y = $c }
    END { if (x != "" && y + 0 != 0) printf "%s / %s = %.2f", a, b, x / y }' "$1"
}
img() { [ $plots -gt 0 ] && printf '![%s](%s.png)\n\n' "$1" "$1" || true; }

{
  echo "# taskwire benchmark report"
  echo
  if [ $quick = 2 ]; then
    echo "**Smoke run** (\`bench/report.sh --smoke\`): tiny sizes; the figures mean nothing."
    echo
  elif [ $quick = 1 ]; then
    echo "**Quick run** (\`bench/report.sh --quick\`): short time budgets and a small array, so the"
    echo "figures are indicative only; run \`bench/report.sh\` without \`--quick\` for the full one."
    echo
  fi
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); $source_state"
  echo "- Machine: $(nproc) cores, $(uname -sr); $(mpichversion 2>/dev/null | head -1 | tr -s '\t ' ' ' || echo MPICH)"
  echo "- Load before: \`${load_before# }\`"
  echo "- Load after: \`${load_after# }\` (took ${elapsed} s)"
  echo
  echo "The machine may be shared: compare ratios within this run rather than absolute figures."
  echo "Ratios above 1 mean the first backend takes longer (latency, time) or moves more (bandwidth)."
  echo
  echo "## Latency (ping-pong between ranks 0 and 1, p50 round trip in microseconds)"
  echo
  img latency
  pivot "$out/latency.csv" 2 size 4 "%.2f" mpi raw-mpi tcp raw-tcp mpi/tcp raw-mpi/raw-tcp mpi/raw-mpi tcp/raw-tcp
  echo
  echo "## Bandwidth (one-way stream rank 0 -> rank 1, GB/s)"
  echo
  img bandwidth
  pivot "$out/bandwidth.csv" 2 size 5 "%.3f" mpi raw-mpi tcp raw-tcp mpi/tcp raw-mpi/raw-tcp mpi/raw-mpi tcp/raw-tcp
  echo
  echo "## Task throughput (mpiexec.mpich -n 4: scheduler on rank 0, client on rank 1, two single-thread worker ranks)"
  echo
  echo "independent: a map of no-op tasks; chain: each task depends on the previous one; fan-in:"
  echo "leaves then a binary tree of add tasks (2L - 1 tasks, the sum checked); roundtrip: submit().get()."
  echo
  img tasks
  csv_table "$out/tasks.csv"
  echo
  echo "The floor under a round trip on this host (\`taskwire-bench relay\`): 4 processes pass a byte"
  echo "along the same hops (client, scheduler, worker, scheduler, client) doing no work, sleeping in"
  echo "read() on pipes (every hop a wake-up, as for taskwire's ranks, which sleep when idle), then"
  echo "spinning on shared memory with sched_yield() (every process polling, using a core whenever it can)."
  echo
  csv_table "$out/relay.csv"
  echo
  echo "## Blocked array: sum((X + X^T)^T) under mpiexec.mpich -n 5 (3 worker ranks)"
  echo
  csv_table "$out/array.csv"
  echo
  echo "Time ratio: $(ratio_line "$out/array.csv" 1 5 mpi tcp) (below 1: faster over MPI)."
  echo
  echo "## Task graphs that move data (\`taskwire-bench dag\`, mpiexec.mpich -n 4, ms, medians)"
  echo
  echo "stencil: a ring of blocks over time steps, each task reading its own and both neighbours'"
  echo "blocks; matmul: blocked product with a tree of adds per output block; tree: map, then a"
  echo "binary tree of element-wise adds; shuffle: every output reads a piece of every input."
  echo "Rounds alternate the transports; every result is checked against a direct computation."
  echo
  img dag
  awk -F, 'function human(n) { if (n >= 1048576) return sprintf("%.0f MiB", n / 1048576);
      if (n >= 1024) return sprintf("%.0f KiB", n / 1024); return n " B" }
    NR == 1 { print "backend,graph,ms"; next } { printf "%s,%s %s (%d tasks),%.3f\n", $1, $2, human($3), $4, $5 * 1e3 }' \
    "$out/dag.csv" > "$out/dag-ms.csv"
  pivot "$out/dag-ms.csv" 2 graph 3 "%.2f" mpi tcp mpi/tcp
  rm -f "$out/dag-ms.csv"
  echo
  if [ $metg = 1 ]; then
    echo "## TaskBench METG(50%) (\`bench/metg.sh\`: stencil_1d, width 2, compute_bound)"
    echo
    echo "The smallest time per task (elapsed x 2 cores / tasks) at which a system still reaches half"
    echo "the peak FLOP/s that TaskBench's own MPI implementation (nonblock, \`mpiexec.mpich -n 2\`)"
    echo "reaches in this run; taskwire runs under \`mpiexec.mpich -n 4\` (2 single-thread workers)."
    echo
    echo '```'
    sed -n '/^system  *METG/,/^$/p' "$out/metg.txt"
    echo '```'
    echo
  fi
  echo "## Idle CPU (mpiexec.mpich -n 4, cluster up and idle, % of one core per rank)"
  echo
  echo "Rank 0 runs the scheduler, rank 1 the client (asleep), ranks 2 and 3 workers."
  echo
  pivot "$out/idle.csv" 2 rank 6 "%.2f" mpi tcp
  echo
  echo "## Commands"
  echo
  echo '```sh'
  echo "export MPIEXEC_TIMEOUT=$MPIEXEC_TIMEOUT"
  for c in "${commands[@]}"; do echo "${c//"$bench"/taskwire-bench}"; done
  echo '```'
  echo
  echo "Raw outputs: the \`.txt\` and \`.csv\` files next to this report."
} > "$out/report.md"
if [ $hosts = 1 ]; then
  quick_flag=$( [ $quick = 2 ] && echo --smoke || { [ $quick = 1 ] && echo --quick; } || true)
  "$here/bench/hosts.sh" $quick_flag --bench "$bench" "$out/hosts"
  { echo; echo "## Across emulated hosts (bench/hosts.sh)"; echo
    sed -e '1d' -e 's|(hosts-|(hosts/hosts-|' "$out/hosts/hosts.md"; } >> "$out/report.md"
fi
echo "report.sh: wrote $out/report.md, $plots plots"
