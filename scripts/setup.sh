#!/usr/bin/env bash
# Installs the Debian packages a posemb command needs, only those missing. Idempotent: a second
# run installs nothing and takes well under a second.
#
#   scripts/setup.sh build    compiler, CMake and the libraries the library, lab and tool use
#   scripts/setup.sh demo     = build (the demo needs nothing else)
#   scripts/setup.sh bench    build + Google Benchmark + the PyTorch and numpy peers
#   scripts/setup.sh link TOOL DIR
#                             DIR/posemb -> TOOL (a symlink; `make build` and `make demo` put
#                             the built tool on PATH this way; unchanged when already there)
#   scripts/setup.sh test     bench + test frameworks, clang (format, fuzzing, sanitizers),
#                             Open MPI (the data-parallel tests; MPI stays optional when
#                             building) and what the Python module needs to build and be tested
#                             (pybind11, Python headers, pytest, venv + setuptools + wheel for
#                             the offline `pip install` check)
set -euo pipefail

build=(
  build-essential cmake make pkg-config
  libomp-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libstb-dev
  fonts-dejavu-core                                          # text in the tool's PNG plots
  libhwy-dev
)
# libopenblas-dev: the BLAS behind the numpy and PyTorch peers (without it, apt may give
# Debian's torch the reference BLAS, its first alternative: a handicapped peer). The lab itself
# uses no BLAS (lab/model/gemm.hpp).
bench=(libbenchmark-dev python3 python3-numpy python3-torch libopenblas-dev)
test=(
  git clang clang-format libclang-rt-14-dev                  # format check, libFuzzer, sanitizers
  libgtest-dev libgmock-dev librapidcheck-dev
  openmpi-bin libopenmpi-dev                                 # mpirun tests of train and sweep
  pybind11-dev python3-dev python3-pytest python3-venv python3-setuptools python3-wheel
)

if [ "${1:-}" = link ]; then
  tool=${2:?usage: scripts/setup.sh link TOOL DIR}
  dir=${3:?usage: scripts/setup.sh link TOOL DIR}
  if [ "$(readlink "$dir/posemb" 2>/dev/null)" = "$tool" ]; then exit 0; fi
  if [ -e "$dir/posemb" ] && [ ! -L "$dir/posemb" ]; then
    echo "setup: $dir/posemb exists and is not a symlink: left alone; run $tool" >&2
    exit 0
  fi
  if mkdir -p "$dir" 2>/dev/null && ln -sfn "$tool" "$dir/posemb" 2>/dev/null; then
    echo "setup: $dir/posemb -> $tool"
  else
    echo "setup: cannot write $dir/posemb (not root?): run $tool, or add $(dirname "$tool") to PATH" >&2
  fi
  exit 0
fi

case "${1:-test}" in
  build | demo) packages=("${build[@]}") ;;
  bench) packages=("${build[@]}" "${bench[@]}") ;;
  test) packages=("${build[@]}" "${bench[@]}" "${test[@]}") ;;
  *)
    echo "usage: scripts/setup.sh [build|demo|bench|test]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
