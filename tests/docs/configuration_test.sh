#!/usr/bin/env bash
# docs/configuration.md lists every setting: each TASKWIRE_* variable the code reads, each flag
# of the daemons' --help, each field of the public options structs. Fails naming what is
# missing, so a new knob cannot land undocumented.
# usage: configuration_test.sh SOURCE_DIR SCHEDULER WORKER TASKWIRE_MPI TASKWIRE_JOBQUEUE
set -euo pipefail
src=$1 scheduler=$2 worker=$3 taskwire_mpi=$4 jobqueue=$5
doc="$src/docs/configuration.md"
[ -f "$doc" ] || { echo "FAIL: $doc is missing"; exit 1; }
missing=0
miss() { echo "FAIL: $1"; missing=$((missing + 1)); }

# The text of the section whose heading is exactly "$1" (up to the next heading of any level).
section() {
  awk -v h="$1" '$0 == h {p = 1; next} p && /^#/ {exit} p {print}' "$doc"
}

# 1. Environment variables: every "TASKWIRE_..." string literal in the library and daemons,
# except the names of macros (TASKWIRE_REGISTER appears in messages).
macros=$(grep -rhoE '#define TASKWIRE_[A-Z0-9_]+' "$src"/{runtime,comm,client,worker,scheduler,graph,launch} \
  | awk '{print $2}' | sort -u)
vars=$(grep -rhoE '"TASKWIRE_[A-Z0-9_]+"' --include='*.cpp' --include='*.hpp' \
  "$src"/{runtime,comm,client,worker,scheduler,graph,launch} | tr -d '"' | sort -u)
env_section=$(section "## Environment variables")
[ -n "$vars" ] || miss "found no TASKWIRE_* variable in the sources (is SOURCE_DIR right?)"
for v in $vars; do
  grep -qx "$v" <<<"$macros" && continue
  grep -qF "\`$v\`" <<<"$env_section" || miss "variable $v is read by the code but not in '## Environment variables'"
done

# At most 12 variables are settings (issue 37): the rest say "not a setting" (a diagnostic, or
# set by taskwire for its own processes).
settings=$(grep -E '^\| `TASKWIRE_' <<<"$env_section" | grep -vc 'not a setting' || true)
[ "$settings" -le 12 ] || miss "$settings TASKWIRE_* variables are settings; at most 12 may be"

# 2. Daemon flags, from each program's own --help.
check_flags() {  # program heading
  local flags
  flags=$("$1" --help | grep -oE '^ +(-[a-z] \[ )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | sort -u)
  [ -n "$flags" ] || miss "$1 --help listed no flags"
  local text
  text=$(section "$2")
  [ -n "$text" ] || miss "no section '$2'"
  for f in $flags; do
    grep -qF -- "\`$f" <<<"$text" || miss "flag $f of $(basename "$1") not in '$2'"
  done
}
check_flags "$scheduler" "## taskwire-scheduler"
check_flags "$worker" "## taskwire-worker"
check_flags "$taskwire_mpi" "## taskwire-mpi"
check_flags "$jobqueue" "## taskwire-jobqueue"

# 3. Fields of the public options structs: header, struct name.
fields_of() {  # header struct -> field names, one per line
  awk -v s="$2" '
    $0 ~ "^struct " s " " {p = 1; next}
    p && /^};/ {exit}
    p {
      line = $0; sub(/\/\/.*/, "", line)
      if (line !~ /;[ \t]*$/ || line ~ /^[ \t]*(static|using|friend|template|return)/) next
      if (line ~ /\)[ \t]*(const)?[ \t]*;/ && line !~ /[=}][^=]*;[ \t]*$/) next   # a method
      sub(/[ \t]*(=.*|\{.*\})?;[ \t]*$/, "", line)
      n = split(line, w, /[^A-Za-z0-9_]+/)
      while (n > 0 && w[n] == "") n--
      if (n > 1) print w[n]
    }' "$src/$1"
}
structs=(
  "client/client.hpp ClientOptions"
  "worker/worker_server.hpp WorkerOptions"
  "scheduler/scheduler_state.hpp SchedulerOptions"
  "scheduler/scheduler_server.hpp SchedulerServerOptions"
  "launch/mpi/launch.hpp LaunchOptions"
  "comm/mpi/mpi_environment.hpp MpiEnvironmentOptions"
  "runtime/log.hpp LogOptions"
  "comm/core/connect.hpp ListenOptions"
  "runtime/config.hpp Config"
  "runtime/config.hpp Limits"
  "runtime/config.hpp MpiPollConfig"
  "graph/options.hpp ExecuteOptions"
  "graph/options.hpp ProgressOptions"
  "client/progress.hpp ProgressReportOptions"
  "graph/graph.hpp ReduceOptions"
  "launch/job_cluster.hpp JobClusterOptions"
  "launch/adaptive.hpp AdaptOptions"
  "launch/slurm/slurm_batch.hpp SlurmCommands"
)
for entry in "${structs[@]}"; do
  read -r header name <<<"$entry"
  [ -f "$src/$header" ] || { miss "$header (of $name) does not exist: update this test"; continue; }
  fields=$(fields_of "$header" "$name")
  [ -n "$fields" ] || { miss "no fields found in $name ($header): update this test"; continue; }
  text=$(section "### $name")
  [ -n "$text" ] || { miss "no section '### $name'"; continue; }
  for f in $fields; do
    grep -qF "\`$f\`" <<<"$text" || miss "field $name::$f ($header) not in '### $name'"
  done
done

if [ "$missing" -gt 0 ]; then
  echo "$missing setting(s) missing from docs/configuration.md"
  exit 1
fi
echo "PASS: every variable, flag and options field is in docs/configuration.md"
