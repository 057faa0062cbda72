#!/usr/bin/env bash
# Installs the built package into a scratch prefix, then configures, builds and runs the
# consumer project against it with find_package(posemb CONFIG REQUIRED).
set -euo pipefail
build_dir="$1" work="$2" cxx="$3"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
"$work/build/consumer"
