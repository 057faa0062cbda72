#!/usr/bin/env bash
# The package installs with pip, offline, from Debian's packages only: a venv of the given
# Python with its system site-packages (numpy, torch, setuptools, wheel), `pip install
# --no-build-isolation --no-index` of the repository, then the installed package is imported and
# used from outside the source tree. The extension is the one the build already made
# (POSEMB_PREBUILT_EXTENSION); then the same install without it reuses the build as a user's
# `pip install .` after `make build` does (setup.py; here the build is named with
# POSEMB_BUILD_DIR, the copy of the sources having no build/ of its own): pip says so, brings it
# up to date (nothing to compile) and installs the same bytes.
#
# usage: pip_install.sh SOURCE_DIR WORK_DIR PYTHON EXTENSION
set -euo pipefail
src=$1 work=$2 python=$3 ext=$4
rm -rf "$work"
mkdir -p "$work"
"$python" -m venv --system-site-packages "$work/venv"
# pip writes its scratch files beside the sources (setup.py keeps them under build/setuptools);
# work on a copy of the tracked files so that parallel tests never share them.
mkdir -p "$work/src"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files -z --cached --others --exclude-standard |
    (cd "$src" && xargs -0 cp --parents -t "$work/src")
else
  tar -C "$src" --exclude='./build*' -cf - . | tar -C "$work/src" -xf -
fi
POSEMB_PREBUILT_EXTENSION=$ext PIP_NO_CACHE_DIR=1 "$work/venv/bin/pip" install -q \
  --no-build-isolation --no-index "$work/src"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import numpy as np
import posemb
import posemb.torch

assert "/venv/" in posemb.__file__, posemb.__file__
table = np.arange(12, dtype=np.float32).reshape(4, 3)
view = posemb.learned_positional_embedding(2, table, 1)
assert np.shares_memory(view, table) and view.tolist() == [[3, 4, 5], [6, 7, 8]]
try:
    posemb.learned_positional_embedding(5, table)
    raise SystemExit("no SequenceTooLong")
except posemb.SequenceTooLong as e:
    assert (e.seq_len, e.start, e.max_seq_len) == (5, 0, 4)
print("pip install: posemb", posemb.__version__, "from", posemb.__file__)
PY

# The build reused: `cmake --build BUILD --target _posemb`, said, and the same extension installed.
build=$(dirname "$(dirname "$(dirname "$ext")")")
rm -rf "$work/venv2" "$work/src/build"
"$python" -m venv --system-site-packages "$work/venv2"
POSEMB_BUILD_DIR=$build PIP_NO_CACHE_DIR=1 "$work/venv2/bin/pip" install -v \
  --no-build-isolation --no-index "$work/src" >"$work/reuse.log" 2>&1 ||
  { tail -20 "$work/reuse.log"; exit 1; }
grep -q "posemb: reusing the build in $build: cmake --build $build --target _posemb" \
  "$work/reuse.log" || { echo "pip did not reuse $build:"; tail -20 "$work/reuse.log"; exit 1; }
installed=$("$work/venv2/bin/python" -c "import posemb._posemb as m; print(m.__file__)")
cmp "$installed" "$ext"
echo "pip install: reused $build ($(grep -o 'reusing the build in .*: done in [0-9]* s' "$work/reuse.log"))"
