#!/usr/bin/env bash
# posemb sweep in one process: the grid of lists in its documented order, the same results.csv
# one run at a time and two at a time, results.json's shape, a chart per group, usage errors
# (exit 2, naming the flag), and a failed run reported after the others are written (exit 1).
# (Under mpirun: tests/mpi/test_mpi_cli.sh.)
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

grid=(--pe learned,none --seeds 1:2,5 --train-len 3,4 --d-model 16 --heads 2 --alphabet 4
      --batch 8 --micro-batch 4 --steps 6 --warmup 2 --samples 6 --eval-max 6)

expect 0 "one at a time" -- sweep "${grid[@]}" --out "$tmp/a" --threads 2
contains out "posemb sweep: 12 runs on 1 rank" "the run count"
contains out "train_len=4 pe=none seed=5" "the summary names the runs by their varying axes"
contains err "sweep: run 12 of 12" "progress per finished run"
expect 0 "two at a time" -- sweep "${grid[@]}" --out "$tmp/b" --parallel-runs 2 --quiet
cmp -s "$tmp/a/results.csv" "$tmp/b/results.csv" || fail "results.csv depends on --parallel-runs"
[ ! -s "$tmp/out" ] || fail "--quiet printed: $(head -n 3 "$tmp/out")"
for f in length_generalization_train_len_3.svg length_generalization_train_len_4.svg; do
  grep -q "<svg" "$tmp/a/$f" 2>/dev/null || fail "no chart $f"
done
"$py" - "$tmp/a" <<'PY' || fail "results.csv / results.json"
import csv, json, sys, math
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/results.csv")))
assert len(rows) == 12 * 6, len(rows)
# The grid's order: train_len, then pe, then seed innermost; 6 lengths per run.
order = [(r["train_len"], r["pe"], r["seed"]) for r in rows[::6]]
want = [(t, p, s) for t in ("3", "4") for p in ("learned", "none") for s in ("1", "2", "5")]
assert order == want, order
for r in rows:
    n, L = int(r["length"]), int(r["train_len"])
    if r["pe"] == "learned" and 2 * n + 2 > 2 * L + 2:
        assert r["status"] == "beyond_table" and r["exact_match"] == "", r
    else:
        assert r["status"] == "ok" and 0 <= float(r["exact_match"]) <= 1, r
    assert math.isfinite(float(r["final_loss"])), r
j = json.load(open(d + "/results.json"))
assert len(j["runs"]) == 12
run = j["runs"][0]
for k in ("name", "task", "alphabet", "train_len", "pe", "seed", "d_model", "layers", "heads",
          "d_ff", "batch", "micro_batch", "steps", "lr", "max_seq_len", "final_loss",
          "train_seconds", "rank", "error", "results"):
    assert k in run, k
assert run["rank"] == 0 and run["error"] is None and run["max_seq_len"] == 8, run
assert j["runs"][3]["max_seq_len"] is None  # none: no table
assert [x["length"] for x in run["results"]] == [1, 2, 3, 4, 5, 6]
PY

# --max-seq-len sizes the tables of the encodings that have one, and leaves the others alone (the
# corpus column is empty: copy reads none).
expect 0 "a table size with a computed encoding" -- sweep --pe learned,sinusoidal --seeds 1 \
  --max-seq-len 20 --train-len 3 --d-model 16 --heads 2 --alphabet 4 --batch 4 --steps 2 \
  --samples 2 --eval-max 2 --out "$tmp/m" --quiet
grep -q "pe=learned seed=1,copy,,4,3,learned,1,16,2,2,64,4,8,2,0.001,20," "$tmp/m/results.csv" ||
  fail "the learned run's table has 20 rows"
grep -q "pe=sinusoidal seed=1,copy,,4,3,sinusoidal,1,16,2,2,64,4,8,2,0.001,," "$tmp/m/results.csv" ||
  fail "the sinusoidal run has no table"

# --rope-scaling: each rope run also evaluated with each scaling, zero-shot, reported as a run of
# its own; the scaled rows are those of `posemb eval --rope-scaling` on the checkpoint `posemb
# train` makes with the same settings, the "none" rows those of a plain eval.
small=(--train-len 3 --d-model 16 --heads 2 --alphabet 4 --batch 8 --micro-batch 4 --steps 150
       --warmup 2)
expect 0 "rope scalings" -- sweep --pe learned,rope --seeds 1 "${small[@]}" --samples 8 \
  --eval-max 9 --rope-scaling none,linear,yarn --rope-factor 2,3 --out "$tmp/rs" --quiet
grep -q "<svg" "$tmp/rs/length_generalization.svg" || fail "no chart of the rope scalings"
grep -q "rope (yarn x3)" "$tmp/rs/length_generalization.svg" || fail "no chart line for yarn x3"
expect 0 "the rope run alone" -- train --pe rope --seed 1 "${small[@]}" --out "$tmp/rt" --quiet
for s in "none" "linear 2" "yarn 3"; do
  set -- $s
  flags=(--rope-scaling "$1")
  [ $# -eq 2 ] && flags+=(--rope-factor "$2")
  expect 0 "eval with $s" -- eval --checkpoint "$tmp/rt/checkpoint.safetensors" --lengths 1:9 \
    --samples 8 --seed 1234 "${flags[@]}" --out "$tmp/re_$1" --quiet
done
"$py" - "$tmp" <<'PY' || fail "the sweep's scaled evaluations"
import csv, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/rs/results.csv")))
scalings = [r["rope_scaling"] for r in rows[::9]]
assert scalings == ["", "none", "linear x2", "linear x3", "yarn x2", "yarn x3"], scalings
assert all(r["pe"] == "rope" for r in rows[9:]), "only rope runs are scaled"
assert rows[9]["run"] == "pe=rope seed=1 rope_scaling=none", rows[9]["run"]
def cells(rs):
    return [(r["length"], r["status"], r["exact_match"], r["token_accuracy"]) for r in rs]
for name, label in (("none", "none"), ("linear", "linear x2"), ("yarn", "yarn x3")):
    ev = cells(csv.DictReader(open(d + "/re_%s/results.csv" % name)))
    sw = cells(r for r in rows if r["rope_scaling"] == label)
    assert ev == sw, (label, ev, sw)
# The scalings change something past the training length (n > 3).
far = lambda label: [r["token_accuracy"] for r in rows if r["rope_scaling"] == label][3:]
assert far("none") != far("yarn x3") or far("none") != far("linear x2"), "scalings changed nothing"
PY
expect 2 "a rope scaling without its factor" -- sweep --pe rope --rope-scaling yarn
contains err "--rope-factor" "the missing factor named"
one_line "a rope scaling without its factor"
expect 2 "a rope factor without a scaling" -- sweep --pe rope --rope-factor 2
contains err "--rope-factor" "the factor without a method named"
expect 2 "rope scalings without a rotating encoding" -- sweep --pe learned,alibi --rope-scaling none
contains err "--rope-scaling" "the scaling named when no encoding rotates"
expect 2 "a rope factor below 1" -- sweep --pe rope --rope-scaling ntk --rope-factor 0.5
expect 2 "a rope scaling twice" -- sweep --pe rope --rope-scaling yarn,yarn --rope-factor 2
contains err "(flag --rope-scaling)" "the repeated scaling named"

# Usage errors: exit 2 with one line naming the flag.
expect 2 "seeds backwards" -- sweep --seeds 3:1
contains err "--seeds" "the message names --seeds"
one_line "seeds backwards"
expect 2 "seeds not numbers" -- sweep --seeds a,b
expect 2 "an unknown encoding in the list" -- sweep --pe learned,banana
expect 2 "a length past the limit in the list" -- sweep --train-len 4,1025
expect 2 "heads that do not divide a width" -- sweep --d-model 16,10 --heads 4
contains err "--d-model" "the config error names the flags"
expect 2 "no runs at a time" -- sweep --parallel-runs 0
expect 2 "a grid too large" -- sweep --seeds 1:99999 --pe learned,none
expect 2 "a seed twice" -- sweep --seeds 1:3,2
contains err "(flag --seeds)" "the seed list named"
expect 2 "a length twice" -- sweep --train-len 4,8,4
contains err "(flag --train-len)" "the length list named"
one_line "a length twice"
expect 2 "a seed past 2^64 - 1" -- sweep --seeds 18446744073709551616

# A run that fails (the loss explodes) is written as such; the others still are; exit 1.
expect 1 "a failing run" -- sweep --pe learned --seeds 1 --lr 0.001,1e30 --grad-clip 0 \
  --train-len 3 --d-model 16 --heads 2 --alphabet 4 --batch 8 --steps 30 --warmup 2 \
  --samples 4 --out "$tmp/f" --quiet
contains err "1 of 2 runs failed" "the error counts the failed runs"
contains err "lr=1e+30 pe=learned seed=1" "the error names the run"
one_line "a failing run"
grep -q ",failed,," "$tmp/f/results.csv" || fail "the failed run's row says failed"
grep -q "lr=0.001 pe=learned seed=1,.*,ok," "$tmp/f/results.csv" ||
  fail "the good run's rows are written"

finish sweep_cli
