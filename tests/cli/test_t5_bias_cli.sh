#!/usr/bin/env bash
# posemb train --pe t5-bias / eval / sweep: T5's learned relative bias trains a few steps, writes a
# checkpoint with its (buckets, heads) table and no position table, gives the same checkpoint on 1
# and 2 threads, resumes bit for bit, evaluates past the trained length (no beyond_table); the
# bucket flags are refused in one line where they cannot apply; sweep takes it beside alibi with
# the bucket flags given (alibi ignores them); `train --help` lists it and its flags.
set -u
bin="$1"
py=/usr/bin/python3
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

tiny=(--d-model 16 --heads 2 --layers 2 --train-len 4 --alphabet 4 --batch 8 --micro-batch 2
      --warmup 2 --quiet)

expect 0 "train --help" -- train --help
contains out "t5-bias" "train --help lists t5-bias"
contains out "--num-buckets" "train --help shows --num-buckets"
contains out "--max-distance" "train --help shows --max-distance"

expect 0 "train t5-bias" -- train "${tiny[@]}" --pe t5-bias --steps 6 --out "$tmp/a" --threads 1
[ -f "$tmp/a/checkpoint.safetensors" ] || fail "no checkpoint written"
expect 0 "train t5-bias on 2 threads" -- train "${tiny[@]}" --pe t5-bias --steps 6 --out "$tmp/b" \
  --threads 2
cmp -s "$tmp/a/checkpoint.safetensors" "$tmp/b/checkpoint.safetensors" ||
  fail "t5-bias: 1 and 2 threads give different checkpoints"
# Resumed from step 3: the same file as 6 steps in one go.
expect 0 "train 3 steps" -- train "${tiny[@]}" --pe t5-bias --steps 6 --out "$tmp/r" --stop-after 3
expect 0 "resume" -- train --resume "$tmp/r/checkpoint.safetensors" --out "$tmp/r" --quiet
cmp -s "$tmp/a/checkpoint.safetensors" "$tmp/r/checkpoint.safetensors" ||
  fail "t5-bias: a resumed run differs from one in one go"

# The table (10 buckets: copy n <= 4 is 10 tokens) and the run's buckets in the checkpoint.
"$py" - "$tmp/a/checkpoint.safetensors" <<'PY' || fail "checkpoint contents"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
t = header["relative_attention_bias.weight"]
assert t["dtype"] == "F32" and t["shape"] == [10, 2], t
assert "wpe.weight" not in header
run = json.loads(header["__metadata__"]["posemb.lab.run"])
assert run["model"]["relative_bias"] == {"num_buckets": 10, "max_distance": 10}, run["model"]
PY

expect 0 "train with buckets given" -- train "${tiny[@]}" --pe t5-bias --steps 2 \
  --num-buckets 6 --max-distance 8 --out "$tmp/g"
expect 0 "train with buckets given (printed)" -- train --d-model 16 --heads 2 --layers 2 \
  --train-len 4 --alphabet 4 --batch 8 --warmup 1 --pe t5-bias --steps 1 --num-buckets 6 \
  --max-distance 8 --out "$tmp/g2"
contains out "pe t5-bias (6 buckets, max distance 8)" "train prints the buckets"

# Refused in one line: buckets for an encoding without them; a max distance T5 cannot divide by.
expect 2 "alibi has no buckets" -- train "${tiny[@]}" --pe alibi --num-buckets 16 --out "$tmp/c"
one_line "alibi has no buckets"
contains err "--num-buckets" "the refusal names the flag"
expect 2 "max distance not above max_exact" -- train "${tiny[@]}" --pe t5-bias --num-buckets 32 \
  --max-distance 16 --out "$tmp/c"
one_line "max distance not above max_exact"
contains err "max_distance = 16 must be above max_exact = 16" "the refusal names the numbers"
expect 2 "init-from cannot change the buckets" -- train --init-from \
  "$tmp/a/checkpoint.safetensors" --max-distance 12 --out "$tmp/c"
one_line "init-from cannot change the buckets"

# Eval past the trained length (n = 4): every row is evaluated (no beyond_table).
expect 0 "eval t5-bias" -- eval --checkpoint "$tmp/a/checkpoint.safetensors" --lengths 1:9 \
  --samples 5 --out "$tmp/e"
contains out "pe t5-bias, 10 buckets, max distance 10" "eval names the encoding and its buckets"
grep -q beyond_table "$tmp/e/results.csv" && fail "t5-bias reported beyond_table"
[ "$(grep -c '^t5-bias,' "$tmp/e/results.csv")" -eq 9 ] || fail "results.csv lacks 9 t5-bias rows"

# Sweep takes it beside alibi, the bucket flags applying to t5-bias only.
expect 0 "sweep t5-bias" -- sweep --pe alibi,t5-bias --seeds 1 "${tiny[@]}" --steps 3 \
  --num-buckets 8 --eval-max 5 --samples 3 --out "$tmp/s"
grep -q ',t5-bias,1,' "$tmp/s/results.csv" || fail "sweep's results.csv has no t5-bias rows"
grep -q ',alibi,1,' "$tmp/s/results.csv" || fail "sweep's results.csv has no alibi rows"

finish t5_bias_cli
