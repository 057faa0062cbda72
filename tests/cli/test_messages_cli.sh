#!/usr/bin/env bash
# What posemb says to a user's first mistakes: an unknown flag names the nearest ones of the
# command, a value of the wrong type says what was expected and what was given, a long run of
# lengths beyond a learned table is one line (the csv and json stay complete), inspect gives a
# lab checkpoint's training length in the unit of `train --train-len` and `eval`, the heatmap's
# title names the tensor and the file, a training run's finished progress line is printed once.
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# exact DESCRIPTION TEXT: the last run's stderr is exactly TEXT (one line).
exact() {
  local got
  got=$(cat "$tmp/err")
  [ "$got" = "$2" ] || fail "$1: stderr is '$got', expected '$2'"
}

# Unknown flags: the nearest of the command's own, by shared words, then by fewest edits.
expect 2 "another tool's name for the training length" -- train --seq-len 8
exact "--seq-len" "posemb: usage error: unknown option --seq-len; did you mean --train-len or --max-seq-len? (see 'posemb train --help')"
expect 2 "a typo" -- train --stpes 10
contains err "unknown option --stpes; did you mean --steps" "a swapped pair of letters"
one_line "a typo"
expect 2 "underscores" -- train --max_memory 1G
contains err "did you mean --max-memory" "--max_memory is --max-memory"
expect 2 "with =" -- inspect x.safetensors --reserved=2
contains err "unknown option --reserved; did you mean --reserved-rows" "--reserved=2"
expect 2 "another spelling of a flag" -- train --Train_Len 3
exact "--Train_Len" "posemb: usage error: unknown option --Train_Len; did you mean --train-len? (see 'posemb train --help')"
expect 2 "a hyphen too many" -- train --warm-up 3
contains err "did you mean --warmup?" "--warm-up"
expect 2 "a one-letter option" -- train -x
exact "-x" "posemb: usage error: unknown option -x (see 'posemb train --help')"
expect 2 "dashes only" -- train ---
exact "---" "posemb: usage error: unknown option --- (see 'posemb train --help')"
expect 2 "a stray value" -- train -- 5
one_line "a stray value"
expect 2 "a long unknown option" -- train "--$(printf 'a%.0s' $(seq 1 5000))"
one_line "a long unknown option"
expect 2 "nothing near" -- train --zzzzzzzzzz
exact "nothing near" "posemb: usage error: unknown option --zzzzzzzzzz (see 'posemb train --help')"
expect 2 "demo's own flags" -- demo --max-seq-len 8
contains err "unknown option --max-seq-len" "demo has no --max-seq-len"
contains err "see 'posemb demo --help'" "demo's help"

# Values of the wrong type: what the flag expected, and what it got.
expect 2 "a word for a count" -- train --steps banana
exact "--steps banana" "posemb: usage error: --steps: expected an integer in 1..100000000, got 'banana' (see 'posemb train --help')"
expect 2 "a count out of range" -- train --steps 0
contains err "--steps: expected an integer in 1..100000000, got 0" "--steps 0"
expect 2 "a word for a number" -- train --lr fast
contains err "--lr: 'fast' is not a number" "--lr fast"
expect 2 "a word for a demo count" -- demo --seeds many
contains err "--seeds: expected an integer" "demo --seeds many"

# A tiny learned run to read back (train_len 3: sequences of 8 tokens, an 8-row table).
tiny=(--pe learned --d-model 16 --heads 2 --layers 1 --train-len 3 --alphabet 4 --batch 4
      --micro-batch 2 --steps 3 --warmup 1 --seed 1 --threads 1)
expect 0 "tiny run" -- train "${tiny[@]}" --out "$tmp/run"
# The finished line once (stderr is not a terminal: plain lines).
n=$(grep -c "step 3/3 " "$tmp/err")
[ "$n" -eq 1 ] || fail "train: the finished progress line printed $n times"

# A long run of lengths beyond the table: one line on stdout; the files keep every length.
expect 0 "eval far past the table" -- eval --checkpoint "$tmp/run/checkpoint.safetensors" \
  --lengths 1:100000 --samples 2 --threads 1 --out "$tmp/ev"
contains out "n = 4..100000: beyond_table (the table's 8 rows hold n <= 3)" "the summary line"
lines=$(wc -l <"$tmp/out")
[ "$lines" -le 15 ] || fail "eval --lengths 1:100000 printed $lines lines"
rows=$(grep -c ',beyond_table,' "$tmp/ev/results.csv")
[ "$rows" -eq 99997 ] || fail "results.csv has $rows beyond_table rows, expected 99997"
expect 0 "eval just past the table" -- eval --checkpoint "$tmp/run/checkpoint.safetensors" \
  --lengths 1:4 --samples 2 --threads 1
contains out "beyond_table" "a single length beyond stays a row"
if grep -q "^n = " "$tmp/out"; then fail "one length beyond the table was summarized"; fi

# inspect: the training length as train and eval give it.
expect 0 "inspect a lab checkpoint" -- inspect "$tmp/run/checkpoint.safetensors"
contains out "training length: n = 3 (--train-len; its sequences of 2 n + 2 tokens fill 8 table rows)" \
  "inspect's training length in n"

# The heatmap's title names the tensor and the file: the same values under another tensor name
# or file name draw another title (other pixels); the same names draw the same PNG.
"$py" - "$tmp" <<'PY' || fail "writing the tables"
import json, struct, sys
d = sys.argv[1]
vals = [((i * 7 + j * 3) % 11) / 11.0 - 0.5 for i in range(12) for j in range(8)]
def write(path, name):
    data = struct.pack("<%df" % len(vals), *vals)
    h = json.dumps({name: {"dtype": "F32", "shape": [12, 8], "data_offsets": [0, len(data)]}}).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
write(d + "/a.safetensors", "wpe.weight")
write(d + "/b.safetensors", "wpe.weight")
write(d + "/c.safetensors", "pos_embed.weight")
PY
for f in a b c; do
  expect 0 "inspect --plot $f" -- inspect "$tmp/$f.safetensors" --tensor \
    "$([ $f = c ] && echo pos_embed.weight || echo wpe.weight)" --plot "$tmp/$f.png"
done
expect 0 "inspect --plot a again" -- inspect "$tmp/a.safetensors" --plot "$tmp/a2.png"
cmp -s "$tmp/a.png" "$tmp/a2.png" || fail "the same file and tensor drew different PNGs"
cmp -s "$tmp/a.png" "$tmp/b.png" && fail "another file name drew the same title"
cmp -s "$tmp/a.png" "$tmp/c.png" && fail "another tensor name drew the same title"

finish "messages cli"
