#!/usr/bin/env bash
# posemb train / eval / demo: usage errors exit 2, resume equals an uninterrupted run bit for
# bit, 1 and 2 threads give the same bits, a non-finite loss stops training with the last good
# checkpoint intact, eval reports beyond_table and takes a table resized by `posemb resize`, and
# demo --quick writes its four outputs with results.json in the agreed shape and values a trained
# learned table reaches; limits come from the lab's config and messages name the flags.
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

tiny=(--d-model 16 --heads 2 --layers 2 --train-len 4 --alphabet 4 --batch 8 --micro-batch 2
      --warmup 2 --quiet)

# Usage errors: exit 2 with one line.
expect 2 "unknown encoding" -- train --pe banana
one_line "unknown encoding"
contains err "usage error" "unknown encoding is a usage error"
expect 2 "heads do not divide d-model" -- train --d-model 10 --heads 3
contains err "--heads" "the message names --heads"
expect 2 "table shorter than training" -- train --pe learned --train-len 8 --max-seq-len 5
contains err "18" "the message names the rows needed"
expect 2 "table for an encoding without one" -- train --pe sinusoidal --max-seq-len 40
expect 2 "negative lr" -- train --lr -1
expect 2 "train-len past the config's limit" -- train --train-len 1025
contains err "1024" "the message gives the range"
expect 2 "rope with an odd head dimension" -- train --pe rope --d-model 6 --heads 2
contains err "--d-model" "the config error is mapped to the flags that set it"
expect 2 "eval lengths past the limit" -- eval --checkpoint "$bin" --lengths 1:100001
expect 2 "bad lengths" -- eval --checkpoint "$bin" --lengths 5:2
expect 2 "lengths not numbers" -- eval --checkpoint "$bin" --lengths a:b
expect 2 "eval without checkpoint" -- eval --lengths 1:3
expect 2 "demo bad flag" -- demo --steps banana

# Resume: 12 steps straight == 5 steps, stop, resume to 12.
expect 0 "straight run" -- train "${tiny[@]}" --steps 12 --checkpoint-every 0 --out "$tmp/a"
expect 0 "interrupted run" -- train "${tiny[@]}" --steps 12 --stop-after 5 --out "$tmp/b"
expect 2 "resume with a model flag" -- train --resume "$tmp/b/checkpoint.safetensors" --d-model 32
expect 0 "resumed run" -- train --resume "$tmp/b/checkpoint.safetensors" --out "$tmp/b" --quiet
cmp -s "$tmp/a/checkpoint.safetensors" "$tmp/b/checkpoint.safetensors" ||
  fail "resumed checkpoint differs from the uninterrupted one"

# Threads: 1 and 2 threads, same bits (every encoding).
for pe in learned learned-randomized sinusoidal rope none; do
  expect 0 "threads 1 $pe" -- train "${tiny[@]}" --pe "$pe" --steps 4 --threads 1 --out "$tmp/t1"
  expect 0 "threads 2 $pe" -- train "${tiny[@]}" --pe "$pe" --steps 4 --threads 2 --out "$tmp/t2"
  cmp -s "$tmp/t1/checkpoint.safetensors" "$tmp/t2/checkpoint.safetensors" ||
    fail "$pe: 1 and 2 threads give different checkpoints"
done

# A non-finite loss stops training (exit 1, clear message); the last checkpoint stays good.
expect 1 "exploding lr" -- train "${tiny[@]}" --lr 1e30 --grad-clip 0 --steps 10 \
  --checkpoint-every 1 --out "$tmp/nan"
one_line "exploding lr"
contains err "loss is" "the error says the loss is not finite"
contains err "last checkpoint" "the error points at the checkpoint"
"$py" - "$tmp/nan/checkpoint.safetensors" <<'PY' || fail "the last good checkpoint is unreadable or not finite"
import json, struct, sys, math
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
step = int(h["__metadata__"]["posemb.lab.step"])
assert step >= 1, step
import array
for name, t in h.items():
    if name == "__metadata__":
        continue
    a, b = t["data_offsets"]
    vals = array.array("f", raw[8 + n + a: 8 + n + b])
    assert all(math.isfinite(v) for v in vals), name
PY
expect 0 "eval of the last good checkpoint" -- eval --checkpoint "$tmp/nan/checkpoint.safetensors" \
  --lengths 1:2 --samples 4

# Eval: in-table lengths ok, past the learned table beyond_table; a longer table is accepted.
expect 0 "eval" -- eval --checkpoint "$tmp/a/checkpoint.safetensors" --lengths 3:6 --samples 8 \
  --out "$tmp/ev"
contains out "beyond_table" "n = 5, 6 need positions past the 10-row table"
"$py" - "$tmp/ev/results.json" <<'PY' || fail "eval results.json"
import json, sys
j = json.load(open(sys.argv[1]))
st = {r["length"]: r["status"] for r in j["runs"][0]["results"]}
assert st == {3: "ok", 4: "ok", 5: "beyond_table", 6: "beyond_table"}, st
PY
# A table resized by `posemb resize` replaces the checkpoint's (eval --table).
for m in copy interpolate random; do
  expect 0 "resize $m" -- resize "$tmp/a/checkpoint.safetensors" --to 16 --method "$m" \
    -o "$tmp/grown-$m.safetensors"
  expect 0 "eval with a $m-resized table" -- eval --checkpoint "$tmp/a/checkpoint.safetensors" \
    --table "$tmp/grown-$m.safetensors" --lengths 5:8 --samples 8
  contains out "16 table rows" "the table's rows come from the resized file ($m)"
  grep -q "^ *7 .*beyond_table" "$tmp/out" && fail "$m: n = 7 fits a 16-row table (2n + 2 <= 16)"
  grep -q "^ *8 .*beyond_table" "$tmp/out" || fail "$m: n = 8 needs 18 rows: beyond_table"
done
expect 1 "a table for an encoding without one" -- eval \
  --checkpoint "$tmp/t1/checkpoint.safetensors" --table "$tmp/grown-copy.safetensors" --lengths 1:2

# demo --quick: four outputs, results.json in the agreed shape, and values: every learned length
# past its table is beyond_table (and only those), and the learned run has learned the task in
# distribution. Bounds from `posemb demo --quick --seed S` for S = 1..6 (learned mean exact match
# over n <= 8: 0.669 to 0.838; exact match at n <= 4: 0.90 to 1.00; mean token accuracy 0.891 to
# 0.947): mean exact >= 0.6, exact >= 0.8 at every n <= 4, mean token accuracy >= 0.85.
expect 0 "demo --quick" -- demo --quick --out "$tmp/demo"
for f in results.csv results.json length_generalization.svg learned_table_similarity.png; do
  [ -s "$tmp/demo/$f" ] || fail "demo --quick did not write $f"
done
contains out "beyond_table" "the demo table shows lengths past the learned table"
"$py" - "$tmp/demo" <<'PY' || fail "demo outputs"
import json, sys, xml.dom.minidom
d = sys.argv[1]
j = json.load(open(d + "/results.json"))
assert set(j) == {"task", "train_len", "runs"} and j["task"] == "copy", j.keys()
assert isinstance(j["train_len"], int)
pes = [r["pe"] for r in j["runs"]]
assert pes == ["learned", "learned-randomized", "sinusoidal", "none"], pes
for r in j["runs"]:
    assert set(r) == {"pe", "max_seq_len", "train_seconds", "results"}, r.keys()
    assert (r["max_seq_len"] is None) == (r["pe"] in ("sinusoidal", "none"))
    assert isinstance(r["train_seconds"], float) and r["train_seconds"] > 0
    for x in r["results"]:
        assert set(x) == {"length", "status", "exact_match", "token_accuracy"}
        if x["status"] == "ok":
            assert 0 <= x["exact_match"] <= x["token_accuracy"] <= 1, x
        else:
            assert x["status"] == "beyond_table" and x["exact_match"] is None
            assert r["pe"] == "learned" and x["length"] > j["train_len"], x
runs = {r["pe"]: r for r in j["runs"]}
L = j["train_len"]
learned = runs["learned"]
rows = learned["max_seq_len"]
assert rows == 2 * L + 2, rows
for x in learned["results"]:
    beyond = 2 * x["length"] + 2 > rows
    assert (x["status"] == "beyond_table") == beyond, x
ind = [x for x in learned["results"] if x["length"] <= L]
assert len(ind) == L, ind
mean_exact = sum(x["exact_match"] for x in ind) / L
mean_tok = sum(x["token_accuracy"] for x in ind) / L
assert mean_exact >= 0.6, ("learned in-distribution exact match", mean_exact)
assert mean_tok >= 0.85, ("learned in-distribution token accuracy", mean_tok)
assert all(x["exact_match"] >= 0.8 for x in ind if x["length"] <= 4), ind[:4]
for pe in ("learned-randomized", "sinusoidal", "none"):
    assert all(x["status"] == "ok" for x in runs[pe]["results"]), pe
xml.dom.minidom.parse(d + "/length_generalization.svg")
png = open(d + "/learned_table_similarity.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n"
import struct
w, h = struct.unpack(">II", png[16:24])
assert w >= 480 and h >= 480, ("an 18-row table drawn at a readable size", w, h)
PY

finish "lab cli"
