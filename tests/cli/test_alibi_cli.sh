#!/usr/bin/env bash
# posemb train --pe alibi / eval / sweep: ALiBi trains a few steps, writes a checkpoint without a
# position table, evaluates past the trained length (any position: no beyond_table), gives the
# same checkpoint on 1 and 2 threads, and is accepted by sweep; `train --help` lists it.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

tiny=(--d-model 16 --heads 2 --layers 2 --train-len 4 --alphabet 4 --batch 8 --micro-batch 2
      --warmup 2 --quiet)

expect 0 "train --help" -- train --help
contains out "alibi" "train --help lists alibi"

expect 0 "train alibi" -- train "${tiny[@]}" --pe alibi --steps 6 --out "$tmp/a" --threads 1
[ -f "$tmp/a/checkpoint.safetensors" ] || fail "no checkpoint written"
expect 0 "train alibi on 2 threads" -- train "${tiny[@]}" --pe alibi --steps 6 --out "$tmp/b" \
  --threads 2
cmp -s "$tmp/a/checkpoint.safetensors" "$tmp/b/checkpoint.safetensors" ||
  fail "alibi: 1 and 2 threads give different checkpoints"
expect 2 "alibi has no table" -- train "${tiny[@]}" --pe alibi --max-seq-len 40 --out "$tmp/c"
one_line "alibi has no table"

# Eval past the trained length (n = 4): every row is evaluated (no beyond_table).
expect 0 "eval alibi" -- eval --checkpoint "$tmp/a/checkpoint.safetensors" --lengths 1:9 \
  --samples 5 --out "$tmp/e"
contains out "pe alibi" "eval names the encoding"
grep -q beyond_table "$tmp/e/results.csv" && fail "alibi reported beyond_table"
[ "$(grep -c '^alibi,' "$tmp/e/results.csv")" -eq 9 ] || fail "results.csv lacks 9 alibi rows"

# Sweep takes it.
expect 0 "sweep alibi" -- sweep --pe alibi,none --seeds 1 "${tiny[@]}" --steps 3 \
  --eval-max 5 --samples 3 --out "$tmp/s"
grep -q ',alibi,1,' "$tmp/s/results.csv" || fail "sweep's results.csv has no alibi rows"

finish alibi_cli
