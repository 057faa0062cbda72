#!/usr/bin/env bash
# The text demo through the CLI (`posemb demo --task text --quick`, a few steps) on a corpus of our
# own: every file is written and parses (lm_results.csv/json, lm_extension.csv/json, both SVGs,
# summary.md); every encoding x seed x length is in lm_results.csv (a learned table past its rows
# beyond_table); every extension run is in lm_extension.csv at step 0 and after its fine-tuning;
# summary.md holds the claims; the same seeds give the same numbers twice.
#   test_lm_demo_cli.sh POSEMB PYTHON
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

"$py" - "$tmp/book.txt" <<'PY'
import random, sys
r = random.Random(3)
words = ["the", "whale", "sea", "ship", "and", "of", "a", "to", "in", "captain", "Ahab"]
s = ""
while len(s.encode()) < 40000:
    s += r.choice(words) + (".\n" if r.random() < 0.1 else " ")
open(sys.argv[1], "wb").write(s.encode()[:40000])
PY
tiny=(--task text --quick --corpus "$tmp/book.txt" --steps 4 --randomized-steps 4
      --extension-steps 2 --rope-extension-steps 2 --threads 2)

expect 0 "the text demo, quick" -- demo "${tiny[@]}" --out "$tmp/a"
contains out "## Published claims" "the summary on stdout"
for f in lm_results.csv lm_results.json lm_extension.csv lm_extension.json lm_length.svg \
         lm_extension.svg summary.md; do
  [ -s "$tmp/a/$f" ] || fail "$f missing or empty"
done
for f in results.csv extension.csv length_generalization.svg; do
  [ ! -e "$tmp/a/$f" ] || fail "$f: a symbol demo file in the text demo's folder"
done

"$py" - "$tmp/a" "$bin" <<'PY' || fail "the text demo's files"
import csv, json, subprocess, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
encodings = ["learned", "learned-randomized", "sinusoidal", "rope", "alibi", "t5-bias", "none"]
rows = list(csv.DictReader(open(f"{d}/lm_results.csv")))
got = {(r["pe"], r["seed"], r["length"]): r for r in rows}
for pe in encodings:
    for seed in ("1", "2", "3"):
        for n in (64, 128, 256, 512):
            r = got.get((pe, seed, str(n)))
            assert r is not None, (pe, seed, n)
            beyond = pe == "learned" and n > 64
            assert r["status"] == ("beyond_table" if beyond else "ok"), (pe, seed, n, r["status"])
            if not beyond:
                bpb = float(r["bits_per_token"])
                assert 0 < bpb < 9, (pe, seed, n, bpb)
                # The same bytes at every length: scored + dropped + 1 = the bytes read.
                assert int(r["scored"]) + int(r["dropped"]) == 3999, (pe, n, r)
assert len(rows) == 7 * 3 * 4, len(rows)
j = json.load(open(f"{d}/lm_results.json"))
assert j["task"] == "text" and j["train_len"] == 64 and j["corpus"]["name"] == "book.txt", j.keys()
assert len(j["runs"]) == 21
ext = list(csv.DictReader(open(f"{d}/lm_extension.csv")))
keys = {(r["experiment"], r["method"], r["factor"], r["seed"], r["step"], r["length"]) for r in ext}
for m in ("copy", "interpolate", "random"):
    for seed in ("1", "2", "3"):
        for step in ("0", "2"):
            for n in ("64", "128"):
                assert ("table", m, "2", seed, step, n) in keys, (m, seed, step, n)
for m in ("none", "linear", "ntk", "yarn"):
    for f, lengths in (("2", ("64", "128")), ("4", ("64", "128", "256"))):
        for seed in ("1", "2", "3"):
            for step in ("0", "2"):
                for n in lengths:
                    assert ("rotary", m, f, seed, step, n) in keys, (m, f, seed, step, n)
assert len(ext) == 3 * 3 * 2 * 2 + 4 * 3 * 2 * (2 + 3), len(ext)
e = json.load(open(f"{d}/lm_extension.json"))
assert len(e["table"]["runs"]) == 9 and len(e["rotary"]["runs"]) == 24
for svg in ("lm_length.svg", "lm_extension.svg"):
    root = ET.parse(f"{d}/{svg}").getroot()
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "bits per byte" in text, svg
for pe in encodings:
    assert pe in open(f"{d}/lm_length.svg").read(), pe
md = open(f"{d}/summary.md").read()
assert "## Published claims" in md
for who in ("Vaswani", "Press et al. 2022: the sinusoidal", "Press et al. 2022: ALiBi", "Raffel",
            "Ruoss", "Kazemnejad", "Beltagy", "Chen", "Peng"):
    assert md.count("| " + who) == 1, who
assert "not judged (quick run)" in md or md.count("**reproduced**") == 9
PY

# The same seeds give the same bytes (the data files hold no timings but the JSON's).
expect 0 "the text demo again" -- demo "${tiny[@]}" --out "$tmp/b"
for f in lm_results.csv lm_extension.csv; do
  cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "$f differs between two runs of the same seeds"
done

finish lm_demo_cli
