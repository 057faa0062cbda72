#!/usr/bin/env bash
# The text task through the CLI on a small corpus of our own (never the network): train records
# the corpus (name, bytes, sha256 as sha256sum prints it); eval --lengths 64,128,256 reports bits
# per byte by Press's protocol (the same validation bytes, non-overlapping windows, the dropped
# tail counted), the sliding windows of --stride and the loss by position bucket, into
# results.csv/json and buckets.csv, equal to a recomputation from buckets.csv; a learned table
# past its rows is beyond_table; the corpus refusals are one line naming the numbers; a sweep
# over encodings and two corpora writes one row per run and length, and under mpirun (when
# MPIEXEC is given) the same results.csv.
#   test_text_cli.sh POSEMB PYTHON [MPIEXEC]
set -u
bin="$1"
py="$2"
mpiexec="${3:-}"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# A corpus of text-like bytes (40000: 4000 of validation text), and a second one.
"$py" - "$tmp/book.txt" "$tmp/other.txt" <<'PY'
import random, sys
for path, seed, size in ((sys.argv[1], 1, 40000), (sys.argv[2], 2, 30000)):
    r = random.Random(seed)
    words = ["the", "whale", "sea", "ship", "and", "of", "a", "to", "in", "captain", "Ahab"]
    s = ""
    while len(s.encode()) < size:
        s += r.choice(words) + (".\n" if r.random() < 0.1 else " ")
    open(path, "wb").write(s.encode()[:size])
PY
sha=$(sha256sum "$tmp/book.txt" | cut -d' ' -f1)
small=(--d-model 16 --heads 2 --layers 1 --batch 8 --micro-batch 4 --steps 20 --warmup 2
       --threads 2)

# Train: the corpus named in the header and recorded in the checkpoint.
expect 0 "train on a corpus" -- train --task text --corpus "$tmp/book.txt" --train-len 64 \
  --pe sinusoidal "${small[@]}" --out "$tmp/sin"
contains out "'book.txt' (40000 bytes, sha256 ${sha:0:16}...)" "the header names the corpus"
expect 0 "train a learned table" -- train --task text --corpus "$tmp/book.txt" --train-len 64 \
  --pe learned "${small[@]}" --eval-max 256 --out "$tmp/learned"
contains out "beyond_table (the table's 64 rows)" "train --eval-max: past the table"
# A resumed run sees the same windows: stopped at step 10 and resumed, the same checkpoint bytes.
expect 0 "train, stopped" -- train --task text --corpus "$tmp/book.txt" --train-len 64 \
  --pe sinusoidal "${small[@]}" --stop-after 10 --out "$tmp/half"
expect 0 "train, resumed" -- train --resume "$tmp/half" --steps 20 --threads 1
cmp -s "$tmp/sin/checkpoint.safetensors" "$tmp/half/checkpoint.safetensors" ||
  fail "a resumed text run differs from the uninterrupted one"
"$py" - "$tmp/sin/checkpoint.safetensors" "$sha" <<'PY' || fail "the checkpoint records the corpus"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
meta = json.loads(raw[8:8 + n]).get("__metadata__", {})
assert any(sys.argv[2] in v and "book.txt" in v for v in meta.values()), meta.keys()
PY

# Eval: three lengths, a stride, the files; beyond the learned table.
expect 0 "eval by length" -- eval --checkpoint "$tmp/sin" --lengths 256,64,128 --stride 32 \
  --out "$tmp/ev"
contains out "bits per byte of the validation text by window length T" "the table's title"
contains out "buckets of 64" "the buckets are of the training length"
for f in results.csv results.json buckets.csv; do
  [ -s "$tmp/ev/$f" ] || fail "eval wrote no $f"
done
"$py" - "$tmp/ev" <<'PY' || fail "results.csv / results.json / buckets.csv"
import csv, json, math, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/results.csv")))
assert [int(r["length"]) for r in rows] == [64, 128, 256], rows
V = 4000  # validation bytes: the last 10% of 40000
for r in rows:
    T = int(r["length"])
    assert r["status"] == "ok", r
    windows = (V - 1) // T
    # Press: every byte of the whole windows predicted once, the tail dropped and counted.
    assert int(r["scored"]) == windows * T and int(r["dropped"]) == V - 1 - windows * T, r
    assert int(r["sliding_stride"]) == min(32, T), r
    bpb = float(r["bits_per_token"])
    assert 0 < bpb < 9 and abs(bpb - float(r["loss"]) / math.log(2)) < 1e-5, r
    assert 0 < float(r["sliding_bits_per_token"]) < 9, r
buckets = list(csv.DictReader(open(d + "/buckets.csv")))
for r in rows:
    T = int(r["length"])
    mine = [b for b in buckets if int(b["length"]) == T]
    assert [(int(b["begin"]), int(b["end"])) for b in mine] == \
        [(k, k + 64) for k in range(0, T, 64)], mine
    # The buckets add up to the whole: bpb = total NLL / ln 2 / bytes.
    n = sum(int(b["count"]) for b in mine)
    bits = sum(int(b["count"]) * float(b["bits_per_token"]) for b in mine)
    assert n == int(r["scored"]) and abs(bits / n - float(r["bits_per_token"])) < 1e-5, (r, mine)
j = json.load(open(d + "/results.json"))
assert j["task"] == "text" and j["train_len"] == 64, j
assert j["corpus"]["name"] == "book.txt" and j["corpus"]["bytes"] == 40000, j["corpus"]
assert len(j["corpus"]["sha256"]) == 64
assert len(j["runs"][0]["results"][2]["buckets"]) == 4
PY
expect 0 "eval the learned table past its rows" -- eval --checkpoint "$tmp/learned" \
  --lengths 64,128 --out "$tmp/evl"
contains out "beyond_table (the table's 64 rows)" "a learned table past its rows"
grep -q "^learned,64,128,beyond_table," "$tmp/evl/results.csv" || fail "beyond_table in results.csv"
expect 0 "the corpus moved: --corpus names it" -- eval --checkpoint "$tmp/sin" --lengths 64 \
  --corpus "$tmp/book.txt"

# Refusals, one line each, naming the numbers.
expect 2 "another corpus" -- eval --checkpoint "$tmp/sin" --lengths 64 --corpus "$tmp/other.txt"
contains err "'other.txt' (30000 bytes" "names the given corpus"
contains err "'book.txt' (40000 bytes" "names the recorded corpus"
one_line "another corpus"
expect 2 "a length twice" -- eval --checkpoint "$tmp/sin" --lengths 64,128,64
contains err "names 64 twice" "names the length"
one_line "a length twice"
expect 2 "a length list past the limit" -- eval --checkpoint "$tmp/sin" --lengths 64,200000
contains err "200000 is more than 100000, the largest" "names the limit"
expect 2 "a window the validation text cannot hold" -- eval --checkpoint "$tmp/sin" --lengths 4096
contains err "no window of 4096 tokens" "names the length"
one_line "a window too long"
: >"$tmp/empty.txt"
expect 1 "an empty corpus" -- train --task text --corpus "$tmp/empty.txt" "${small[@]}" \
  --out "$tmp/x"
contains err "empty (0 bytes)" "says empty"
one_line "an empty corpus"
head -c 60 "$tmp/book.txt" >"$tmp/tiny.txt"
expect 2 "a corpus too small for the window" -- train --task text --corpus "$tmp/tiny.txt" \
  --train-len 64 "${small[@]}" --out "$tmp/x"
contains err "60 bytes" "names the corpus's size"
one_line "a corpus too small"
expect 1 "a directory" -- train --task text --corpus "$tmp" "${small[@]}" --out "$tmp/x"
contains err "a directory" "says directory"
one_line "a directory"
mkfifo "$tmp/fifo"
timeout 20 "$bin" train --task text --corpus "$tmp/fifo" "${small[@]}" --out "$tmp/x" \
  >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a FIFO: not refused with exit 1 (or it blocked)"
contains err "a FIFO" "says FIFO"
one_line "a FIFO"
expect 1 "unreadable" -- train --task text --corpus "$tmp/missing.txt" "${small[@]}" --out "$tmp/x"
contains err "missing.txt" "names the file"
one_line "unreadable"
expect 2 "a corpus for a symbol task" -- train --task copy --corpus "$tmp/book.txt" --out "$tmp/x"
one_line "a corpus for a symbol task"
POSEMB_CACHE_DIR="$tmp/nocache" expect 1 "the default corpus missing" -- train --task text \
  "${small[@]}" --out "$tmp/x"
contains err "bash scripts/setup.sh corpus" "names the setup command"
one_line "the default corpus missing"

# The sweep: 2 encodings x 2 corpora; evaluated at L, 2L, 4L.
grid=(--task text --pe learned,alibi --corpus "$tmp/book.txt,$tmp/other.txt" --seeds 1
      --train-len 32 --d-model 16 --heads 2 --layers 1 --batch 8 --micro-batch 4 --steps 6
      --warmup 2 --quiet)
expect 0 "text sweep" -- sweep "${grid[@]}" --threads 1 --out "$tmp/s1"
for f in results.csv results.json buckets.csv length_generalization_corpus_book.txt.svg; do
  [ -s "$tmp/s1/$f" ] || fail "the text sweep wrote no $f"
done
"$py" - "$tmp/s1" <<'PY' || fail "the sweep's results"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
got = [(r["corpus"], r["pe"], r["length"], r["status"]) for r in rows]
want = [(c, p, str(n), "beyond_table" if p == "learned" and n > 32 else "ok")
        for c in ("book.txt", "other.txt") for p in ("learned", "alibi") for n in (32, 64, 128)]
assert got == want, got
j = json.load(open(sys.argv[1] + "/results.json"))
assert [r["corpus"]["name"] for r in j["runs"]] == ["book.txt"] * 2 + ["other.txt"] * 2
PY
grep -q "bits per token" "$tmp/s1/length_generalization_corpus_book.txt.svg" ||
  fail "the sweep's chart plots bits per token"
if [ -n "$mpiexec" ]; then
  # shellcheck source=../mpi/mpi_env.sh
  source "$(dirname "$0")/../mpi/mpi_env.sh"
  timeout 300 "$mpiexec" "${mpi_flags[@]}" -np 2 "$bin" sweep "${grid[@]}" --threads 1 \
    --out "$tmp/s2" >"$tmp/out" 2>"$tmp/err" || fail "the 2-rank text sweep failed: $(tail -n 3 "$tmp/err")"
  for f in results.csv buckets.csv; do
    cmp -s "$tmp/s1/$f" "$tmp/s2/$f" || fail "2 ranks: $f differs from one process's"
  done
fi

finish text_cli
