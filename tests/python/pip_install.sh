#!/usr/bin/env bash
# The package installs with pip, offline, from Debian's packages only: a venv of the given
# Python with its system site-packages (numpy, torch, setuptools, wheel), `pip install
# --no-build-isolation --no-index` of the repository, then the installed package is imported and
# used from outside the source tree. The extension is the one the build already made
# (POSEMB_PREBUILT_EXTENSION); a from-scratch `pip install .` builds the same CMake target.
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
