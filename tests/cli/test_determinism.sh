#!/usr/bin/env bash
# The same seed gives the same checkpoint, byte for byte, on every SIMD target posemb runs on this
# CPU, under several OPENBLAS_CORETYPE values (the lab's matrix products are its own,
# lab/model/gemm.hpp: OpenBLAS's choice of kernels for the CPU must not matter) and on 1 and 2
# threads; and that checkpoint has the committed SHA-256 digest below, so a result that changes
# on another machine (another CPU, compiler or library version) fails here.
#
# The golden digest is of the pinned run
#   posemb train --pe learned --train-len 8 --d-model 32 --steps 100 --seed 1
# (checkpoint.safetensors). To regenerate it: run that command and `sha256sum` the checkpoint.
# Changing it needs a reason in the commit message: it means every result of the lab changed.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

golden=38382d370e4bda313769bb7001c38d6b2a675f42a09778b8758b2f9c6066a228
pinned=(train --pe learned --train-len 8 --d-model 32 --steps 100 --seed 1 --quiet)

digest() {
  sha256sum "$1/checkpoint.safetensors" | cut -d' ' -f1
}

# Every target this build and CPU run, as the error for an unknown POSEMB_SIMD lists them
# ("valid: best, avx512, avx2, sse4, baseline"; "best" is one of the others).
POSEMB_SIMD=none "$bin" train --steps 1 --quiet --out "$tmp/probe" 2>"$tmp/err"
targets=$(sed -n 's/.*valid: //p' "$tmp/err" | tr -d ',' | sed 's/\bbest\b//')
[ -n "$targets" ] || fail "could not list the SIMD targets: $(cat "$tmp/err")"

runs=0
for target in $targets; do
  for core in Haswell SkylakeX Prescott; do
    out="$tmp/$target-$core"
    POSEMB_SIMD=$target OPENBLAS_CORETYPE=$core expect 0 "pinned run on $target, $core" -- \
      "${pinned[@]}" --threads 2 --out "$out"
    got=$(digest "$out")
    [ "$got" = "$golden" ] || fail "pinned run on $target with OPENBLAS_CORETYPE=$core: $got"
    runs=$((runs + 1))
  done
done
expect 0 "pinned run on 1 thread" -- "${pinned[@]}" --threads 1 --out "$tmp/one"
[ "$(digest "$tmp/one")" = "$golden" ] || fail "pinned run on 1 thread: $(digest "$tmp/one")"
[ "$runs" -ge 6 ] || fail "only $runs target x coretype runs (targets: '$targets')"

finish determinism
