#!/usr/bin/env bash
# graph/ and bench/ (the TaskBench driver too) are built on the public API: every taskwire
# header they include from another folder is one `cmake --install` ships
# (cmake/TaskwirePublicHeaders.cmake), so that a user's program could do what they do.
# Fails naming each include of a header that is not installed.
#   public_users_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: public_users_test.sh SOURCE_DIR}
installed=$(grep -oE '[a-z_/]+\.hpp' "$src/cmake/TaskwirePublicHeaders.cmake" | sort -u)
[ -n "$installed" ] || { echo "FAIL: no installed header in cmake/TaskwirePublicHeaders.cmake"; exit 1; }
bad=0 seen=0
for folder in graph bench; do
  while IFS=: read -r file header; do
    seen=$((seen + 1))
    case "$header" in "$folder"/*) continue ;; esac  # the folder's own headers
    grep -qx "$header" <<<"$installed" && continue
    echo "FAIL: $file includes <taskwire/$header>, which is not installed"
    bad=$((bad + 1))
  done < <(grep -rHoE '#include <taskwire/[a-z_/]+\.hpp>' "$src/$folder" --include='*.cpp' \
             --include='*.hpp' | sed -E "s#^$src/##; s#:\#include <taskwire/(.*)>#:\1#")
done
[ "$seen" -gt 0 ] || { echo "FAIL: found no include in graph/ or bench/"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "PASS: graph/ and bench/ include only installed headers of other folders ($seen includes)"
