#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time: first over the regression inputs kept in
# tests/data (every one must pass), then fuzzing from a seed corpus of the committed valid and
# malformed files (for the checkpoint metadata: the metadata of real lab checkpoints).
# Usage: fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$1"
seconds="${2:-30}"
data="$root/tests/data"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for target in safetensors npy checkpoint_metadata rope_config; do
  bin="$build/fuzz/fuzz_$target"
  corpus="$build/fuzz-corpus/$target"
  artifacts="$build/fuzz-artifacts/$target/"
  mkdir -p "$corpus" "$artifacts"
  shopt -s nullglob
  if [ "$target" = checkpoint_metadata ]; then
    # The __metadata__ of real checkpoints (one per encoding, from `posemb train`).
    seeds=("$data"/checkpoint-metadata/*.json "$data"/fuzz-regressions/"$target"/*)
  elif [ "$target" = rope_config ]; then
    # config.json files of every rope_scaling type (and one at the edges of float).
    seeds=("$data"/rope-configs/*.json "$data"/fuzz-regressions/"$target"/*)
  else
    seeds=("$data"/valid/*."$target" "$data"/malformed/*."$target" "$data"/fuzz-regressions/"$target"/*)
  fi
  shopt -u nullglob
  cp -f "${seeds[@]}" "$corpus"/
  echo "fuzz_$target: ${#seeds[@]} seed and regression inputs, then ${seconds}s of fuzzing"
  # Regression inputs (and seeds) run once each; any crash fails.
  "$bin" -runs=0 "${seeds[@]}" >"$build/fuzz-$target-regress.log" 2>&1 || {
    echo "fuzz_$target: a regression input fails:"; tail -30 "$build/fuzz-$target-regress.log"; status=1; continue; }
  if ! "$bin" "$corpus" -dict="$root/fuzz/$target.dict" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=16384 -print_final_stats=1 \
      -artifact_prefix="$artifacts" >"$build/fuzz-$target.log" 2>&1; then
    echo "fuzz_$target: FAILED (inputs in $artifacts); log tail:"
    tail -40 "$build/fuzz-$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$build/fuzz-$target.log" | tail -2
  fi
done
exit $status
