#!/usr/bin/env bash
# Installs the Debian packages posemb needs to build, test and benchmark, only those missing.
# Idempotent: a second run installs nothing and takes well under a second.
set -euo pipefail

packages=(
  build-essential cmake make git pkg-config
  clang clang-format libclang-rt-14-dev libomp-dev   # format check, libFuzzer, sanitizers
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libstb-dev libopenblas-dev
  python3 python3-numpy python3-torch                # independent oracles and peers
)

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
