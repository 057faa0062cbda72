#!/usr/bin/env bash
# check-code-size.py can fail: in a scratch tree with a function of 81 lines in lab/ (and one of
# 80, a class, a namespace and a long table initializer, which are fine), a command file of 151
# lines, a source file of 501 and a function of 101 lines in src/ (and one of 100, fine), it must
# exit 1 naming exactly those four.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lab/model" "$tmp/tools/posemb/experiment" "$tmp/src/nn"
body() {  # a function of $2 lines named $1, a lambda and braces inside
  echo "int $1(int x) {"
  echo "  auto f = [](int y) { if (y) { return 1; } return 0; };"
  for ((i = 0; i < $2 - 4; ++i)); do echo "  x += f(x); // \"{\""; done
  echo "  return x;"
  echo "}"
}
{
  echo "namespace a {"
  echo "struct S {"
  body inside_class 81 | sed 's/^/  /'
  echo "};"
  body fits 80
  echo "constexpr int kTable[] = {"
  for ((i = 0; i < 120; ++i)); do echo "  $i,"; done
  echo "};"
  echo "}  // namespace a"
} >"$tmp/lab/model/m.cpp"
for ((i = 0; i < 151; ++i)); do echo "// line $i"; done >"$tmp/tools/posemb/experiment/cmd_x.cpp"
for ((i = 0; i < 501; ++i)); do echo "// line $i"; done >"$tmp/lab/big.hpp"
{
  body src_fits 100
  body src_long 101
} >"$tmp/src/nn/k.cpp"
set +e
out="$(/usr/bin/python3 "$here/check-code-size.py" "$tmp")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 4 ] || { echo "FAIL: want exactly 4 violations"; exit 1; }
echo "$out" | grep -q '^lab/model/m.cpp:3: function inside_class has 81 lines' || {
  echo "FAIL: function"
  exit 1
}
echo "$out" | grep -q '^tools/posemb/experiment/cmd_x.cpp: 151 lines, more than 150' || {
  echo "FAIL: command"
  exit 1
}
echo "$out" | grep -q '^lab/big.hpp: 501 lines, more than 500' || { echo "FAIL: file"; exit 1; }
echo "$out" | grep -q '^src/nn/k.cpp:101: function src_long has 101 lines, more than 100' || {
  echo "FAIL: src function"
  exit 1
}
echo "ok: check-code-size.py catches all four"
