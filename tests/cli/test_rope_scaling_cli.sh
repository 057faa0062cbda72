#!/usr/bin/env bash
# posemb eval --rope-scaling / --rope-factor on a rope checkpoint, and posemb train --init-from
# with them: the scaling is applied and named, recorded in the fine-tuned checkpoint's settings
# and lineage, used again by a later eval unless told otherwise; usage errors (exit 2, one line)
# for a non-rope checkpoint, a factor <= 0, NaN, below 1 or past 100000 (naming the range), a
# method without a factor, a factor without a method, and the flags on train without --init-from.
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

tiny=(--d-model 16 --heads 2 --layers 2 --train-len 4 --alphabet 4 --batch 8 --micro-batch 2
      --warmup 2 --quiet)
expect 0 "train rope" -- train "${tiny[@]}" --pe rope --steps 6 --out "$tmp/a"
expect 0 "train alibi" -- train "${tiny[@]}" --pe alibi --steps 2 --out "$tmp/x"
ck="$tmp/a/checkpoint.safetensors"

expect 0 "eval --help" -- eval --help
contains out "--rope-scaling" "eval --help lists --rope-scaling"
contains out "dynamic" "eval --help lists the methods"

for m in linear ntk dynamic yarn; do
  expect 0 "eval $m" -- eval --checkpoint "$ck" --lengths 1:8 --samples 4 --rope-scaling "$m" \
    --rope-factor 2
  contains out "rope scaling $m x2 over 10 trained positions" "eval $m names the scaling"
done
expect 0 "eval none" -- eval --checkpoint "$ck" --lengths 1:3 --samples 4 --rope-scaling none
grep -q "rope scaling" "$tmp/out" && fail "eval none names a scaling"

# Usage errors: exit 2, one line, nothing evaluated.
for f in 0 -1 nan 0.5 inf 1e308 100001; do
  expect 2 "factor $f" -- eval --checkpoint "$ck" --lengths 1:3 --rope-scaling linear \
    --rope-factor "$f"
  one_line "factor $f"
  contains err "[1, 100000]" "the message for factor $f names the accepted range"
done
expect 2 "fine-tune with factor 1e308" -- train --init-from "$ck" --rope-scaling ntk \
  --rope-factor 1e308 --steps 2 --quiet --out "$tmp/n"
contains err "[1, 100000]" "train --init-from names the accepted range"
expect 0 "eval the largest factor" -- eval --checkpoint "$ck" --lengths 1:3 --samples 4 \
  --rope-scaling yarn --rope-factor 100000
expect 2 "method without factor" -- eval --checkpoint "$ck" --lengths 1:3 --rope-scaling yarn
one_line "method without factor"
contains err "--rope-factor" "the message names --rope-factor"
expect 2 "factor without method" -- eval --checkpoint "$ck" --lengths 1:3 --rope-factor 2
one_line "factor without method"
expect 2 "unknown method" -- eval --checkpoint "$ck" --lengths 1:3 --rope-scaling llama3 \
  --rope-factor 2
expect 2 "non-rope checkpoint" -- eval --checkpoint "$tmp/x/checkpoint.safetensors" \
  --lengths 1:3 --rope-scaling linear --rope-factor 2
one_line "non-rope checkpoint"
contains err "alibi has none" "the message says the encoding has no rotation"
contains err "--rope-scaling" "the message names the flag"
expect 2 "train without --init-from" -- train "${tiny[@]}" --pe rope --rope-scaling linear \
  --rope-factor 2 --out "$tmp/n"
one_line "train without --init-from"
[ -e "$tmp/n" ] && fail "train wrote its output folder on a usage error"
expect 2 "fine-tune a non-rope checkpoint" -- train --init-from "$tmp/x/checkpoint.safetensors" \
  --rope-scaling linear --rope-factor 2 --steps 2 --quiet --out "$tmp/n"
one_line "fine-tune a non-rope checkpoint"

# Fine-tuning with a scaling: recorded, then used by eval unless told otherwise.
expect 0 "fine-tune with linear x2" -- train --init-from "$ck" --rope-scaling linear \
  --rope-factor 2 --train-len 8 --steps 3 --quiet --out "$tmp/b"
"$py" - "$tmp/b/checkpoint.safetensors" <<'PY' || fail "the fine-tuned checkpoint lacks the scaling"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
run = json.loads(meta["posemb.lab.run"])
assert run["model"]["rope_scaling"] == {"method": "linear", "factor": 2.0, "original_len": 10}, run
assert "rope scaling linear x2 over 10 trained positions" in meta["posemb.lab.lineage"], meta
PY
expect 0 "eval the fine-tuned checkpoint" -- eval --checkpoint "$tmp/b/checkpoint.safetensors" \
  --lengths 1:3 --samples 4
contains out "rope scaling linear x2 over 10 trained positions" "eval uses the recorded scaling"
expect 0 "eval it without scaling" -- eval --checkpoint "$tmp/b/checkpoint.safetensors" \
  --lengths 1:3 --samples 4 --rope-scaling none
grep -q "rope scaling" "$tmp/out" && fail "--rope-scaling none still scales"

finish rope_scaling_cli
