#!/usr/bin/env bash
# Folds the inputs a longer run found into tests/fuzz/corpus/TARGET/, minimized: libFuzzer's
# -merge=1 keeps only the inputs that add coverage. The seed-* files stay as they are (the
# seed check compares them with the encoders); a kept input equal to a seed is dropped.
# Usage: tests/fuzz/merge_corpus.sh TARGET DIR...   (FUZZ_BUILD: build dir, default build/fuzz)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 TARGET DIR..." >&2; exit 2; }
target=$1; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
fuzzer=${FUZZ_BUILD:-$root/build/fuzz}/tests/fuzz/fuzz_$target
corpus=$root/tests/fuzz/corpus/$target
merged=$(mktemp -d)
trap 'rm -rf "$merged"' EXIT
mkdir -p "$corpus"
"$fuzzer" -merge=1 "$merged" "$corpus" "$@" 2>&1 | grep -E "^MERGE-OUTER: [0-9]+ new files" || true
find "$corpus" -maxdepth 1 -type f ! -name 'seed-*' -delete
for seed in "$corpus"/seed-*; do
  [ -e "$seed" ] && rm -f "$merged/$(sha1sum < "$seed" | cut -c1-40)"
done
find "$merged" -maxdepth 1 -type f -exec cp {} "$corpus"/ \;
echo "$corpus: $(find "$corpus" -maxdepth 1 -type f | wc -l) files, $(cat "$corpus"/* | wc -c) bytes"
