#!/usr/bin/env bash
# Measures `posemb train`'s throughput on 1 rank x 1 thread, 2 ranks x 1 thread (mpirun) and
# 1 rank x 2 threads, interleaved and repeated, for the demo's model and a larger one where
# computation dominates; prints tokens/s per run, the median per layout, the ratios to 1 x 1 and
# the load average before and after. A benchmark, not a test (docs/scale.md).
#
#   scripts/bench-scale.sh [POSEMB] [REPS]      (default build/tools/posemb/posemb, 5)
set -euo pipefail
bin="${1:-build/tools/posemb/posemb}"
reps="${2:-5}"
mpiexec="${MPIEXEC:-mpirun}"
# shellcheck source=../tests/mpi/mpi_env.sh
source "$(dirname "$0")/../tests/mpi/mpi_env.sh"
# Two ranks on two cores: one core each.
mpi_flags=(--allow-run-as-root --bind-to core --map-by core)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The demo's model (docs/experiments.md) and a larger one: 4 layers, d_model 256 (3.2 M
# parameters), batch 32 in 4 micro-batches of 8, 60 steps. tokens/s counts the whole training
# time, whose fixed costs (the first step's page faults, the final checkpoint: about 0.3-0.4 s on
# this machine) are about a third of a 12-step run of the larger model on 2 ranks.
demo=(--pe learned --train-len 12 --d-model 64 --layers 2 --heads 4 --batch 32 --micro-batch 8
      --lr 3e-3 --warmup 10 --steps 150)
large=(--pe learned --train-len 16 --d-model 256 --layers 4 --heads 8 --batch 32 --micro-batch 8
       --lr 1e-3 --warmup 5 --steps 60)

tokens_per_s() {  # the "(N tokens/s" of posemb train's summary
  sed -n 's/.*(\([0-9]*\) tokens\/s.*/\1/p' "$1"
}
run() {  # run LAYOUT MODEL-ARRAY-NAME: prints tokens/s
  local layout="$1"
  local -n args="$2"
  case "$layout" in
    1x1) "$bin" train "${args[@]}" --threads 1 --checkpoint-every 0 --out "$out/r" >"$out/log" ;;
    2x1) "$mpiexec" "${mpi_flags[@]}" -np 2 "$bin" train "${args[@]}" --threads 1 \
           --checkpoint-every 0 --out "$out/r" >"$out/log" ;;
    1x2) "$bin" train "${args[@]}" --threads 2 --checkpoint-every 0 --out "$out/r" >"$out/log" ;;
  esac
  tokens_per_s "$out/log"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in demo large; do
  declare -A all=()
  for ((i = 1; i <= reps; i++)); do
    line="$model rep $i:"
    for layout in 1x1 2x1 1x2; do
      t=$(run "$layout" "$model")
      all[$layout]+="$t "
      line+=" $layout $t"
    done
    echo "$line tokens/s"
  done
  m11=$(tr ' ' '\n' <<<"${all[1x1]}" | grep . | median)
  for layout in 1x1 2x1 1x2; do
    m=$(tr ' ' '\n' <<<"${all[$layout]}" | grep . | median)
    echo "$model $layout: median $m tokens/s, $(awk -v a="$m" -v b="$m11" 'BEGIN{printf "%.2f", a/b}')x of 1x1"
  done
  unset all
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
