#!/usr/bin/env bash
# docs/configuration.md lists every setting: each TASKWIRE_* variable the code reads, each
# variable of other software it reads or sets, each flag of the daemons' --help, each field of
# every options struct in an installed header, and each named timing constant. Fails naming
# what is missing, so a new knob cannot land undocumented.
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
code_dirs=("$src"/{runtime,comm,http,client,worker,scheduler,graph,launch,bench})
macros=$(grep -rhoE '#define TASKWIRE_[A-Z0-9_]+' "${code_dirs[@]}" | awk '{print $2}' | sort -u)
vars=$(grep -rhoE '"TASKWIRE_[A-Z0-9_]+"' --include='*.cpp' --include='*.hpp' "${code_dirs[@]}" \
  | tr -d '"' | sort -u)
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
# Every options struct (a name ending in Options, Config or Commands) of an installed header,
# as cmake/TaskwirePublicHeaders.cmake lists them.
installed=$(grep -oE '[a-z_/]+\.hpp' "$src/cmake/TaskwirePublicHeaders.cmake" | sort -u)
[ -n "$installed" ] || miss "found no installed header in cmake/TaskwirePublicHeaders.cmake"
structs=()
for header in $installed; do
  [ -f "$src/$header" ] || continue
  for name in $(grep -oE '^struct [A-Za-z]+(Options|Config|Commands)\b' "$src/$header" | awk '{print $2}'); do
    structs+=("$header $name")
  done
done
[ "${#structs[@]}" -ge 10 ] || miss "found only ${#structs[@]} options structs in installed headers"
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

# 4. Variables of other software (MPI, PMI, Slurm, UCX, glibc...) the code reads or sets.
foreign=$(grep -rhoE '"(SLURM|PMI|PMIX|UCX|MPIR|MPICH|HYDRA|HYDI|OMPI|MALLOC|GLIBC|LD|MV2|I_MPI)_[A-Z0-9_]*"' \
  --include='*.cpp' --include='*.hpp' "${code_dirs[@]}" | tr -d '"' | sort -u)
foreign_section=$(section "## Variables of other software")
[ -n "$foreign" ] || miss "found no variable of other software in the sources"
for v in $foreign; do
  grep -qF "\`$v\`" <<<"$foreign_section" || miss "variable $v is read or set by the code but not in '## Variables of other software'"
done

# 5. Named timing constants: a constexpr whose type is a std::chrono duration, that is
# initialised with a duration literal, or whose name says it is one (...Seconds, ...Latency).
timing=$(grep -rhoE 'constexpr [^;=]*(chrono::[a-z]+|auto|double|std::uint64_t) +k[A-Za-z]+ *(=|\{)[^;]*' \
    --include='*.cpp' --include='*.hpp' "${code_dirs[@]}" \
  | grep -E 'chrono|[0-9](ms|s|us)\b|k[A-Za-z]*(Seconds|Latency|Patience|PerMs)\b' \
  | grep -oE 'k[A-Za-z]+ *(=|\{)' | grep -oE 'k[A-Za-z]+' | sort -u)
timing_section=$(section "## Timing constants")
[ -n "$timing" ] || miss "found no timing constant in the sources"
for k in $timing; do
  grep -qF "\`$k\`" <<<"$timing_section" || miss "timing constant $k is in the code but not in '## Timing constants'"
done

if [ "$missing" -gt 0 ]; then
  echo "$missing setting(s) missing from docs/configuration.md"
  exit 1
fi
echo "PASS: every variable, flag, options field and timing constant is in docs/configuration.md"
