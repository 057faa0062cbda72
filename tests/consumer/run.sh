#!/usr/bin/env bash
# Installs the built package into a scratch prefix, then configures, builds and runs the
# consumer project against it with find_package(posemb CONFIG REQUIRED); then builds the same
# program without CMake, from the installed posemb.pc.
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
# The same program built without CMake, from the installed posemb.pc.
# shellcheck disable=SC2046
"$cxx" -std=c++20 -O1 -o "$work/consumer-pc" "$here/main.cpp" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs posemb)
"$work/consumer-pc"
