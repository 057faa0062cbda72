#!/usr/bin/env bash
# Checks (or with --fix, applies) clang-format on our C++ sources, using the committed
# .clang-format. Exits non-zero and lists the files that differ.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- \
      'include/*.hpp' 'src/*.cpp' 'src/*.hpp' 'lab/*.cpp' 'lab/*.hpp' 'viz/*.cpp' 'viz/*.hpp' \
      'tools/*.cpp' 'tools/*.hpp' \
      'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'bench/*.hpp' 'examples/*.cpp' 'fuzz/*.cpp' \
      'python/*.cpp' 'python/*.hpp'
  else
    find include src lab viz tools tests bench examples fuzz python -type f \( -name '*.cpp' -o -name '*.hpp' \) 2>/dev/null
  fi | while read -r f; do [ -f "$f" ] && echo "$f"; done
)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -ne 0 ]; then
  echo "clang-format: ${#bad[@]} of ${#files[@]} files need formatting (run 'make format'):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files formatted"
