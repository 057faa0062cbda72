#!/usr/bin/env bash
# check-layering.py can fail: in a scratch tree whose lab has an upward include (the model room
# including the trainer's room), two modules of one room including each other, the settings
# including a room and a source outside every room, it must exit 1 naming exactly these four.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lab/model" "$tmp/lab/train" "$tmp/lab/tasks" "$tmp/lab/encodings"
printf '#include "lab/encodings/e.hpp"\n' >"$tmp/lab/config.hpp"
printf '#pragma once\n' >"$tmp/lab/encodings/e.hpp"
printf '#include "lab/encodings/e.hpp"\n' >"$tmp/lab/train/t.hpp"     # down: fine
printf '#include "lab/encodings/e.hpp"\n' >"$tmp/lab/model/m.hpp"     # down: fine
printf '#include "lab/model/m.hpp"\n#include "lab/train/t.hpp"\n' >"$tmp/lab/model/m.cpp"  # up
printf '#include "lab/tasks/b.hpp"\n' >"$tmp/lab/tasks/a.hpp"
printf '#pragma once\n' >"$tmp/lab/tasks/b.hpp"
printf '#include "lab/tasks/b.hpp"\n#include "lab/tasks/a.hpp"\n' >"$tmp/lab/tasks/b.cpp"
printf '#include "lab/config.hpp"\n' >"$tmp/lab/stray.cpp"
set +e
out="$(/usr/bin/python3 "$here/check-layering.py" "$tmp")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(echo "$out" | grep -c '^  ')" -eq 4 ] || { echo "FAIL: want exactly 4 violations"; exit 1; }
echo "$out" | grep -q 'lab/model/m.cpp: room model includes lab/train/t.hpp of room train' || {
  echo "FAIL: upward include"
  exit 1
}
echo "$out" | grep -q 'lab/tasks/a and lab/tasks/b include each other' || { echo "FAIL: pair"; exit 1; }
echo "$out" | grep -q 'lab/config.hpp: the settings include' || { echo "FAIL: settings"; exit 1; }
echo "$out" | grep -q 'lab/stray.cpp: a lab source outside every room' || { echo "FAIL: stray"; exit 1; }
echo "ok: check-layering.py catches all four"
