#!/usr/bin/env bash
# The seed corpus of fuzz_checkpoint_metadata: the __metadata__ of real lab checkpoints, one per
# encoding (and a reverse task), written by `posemb train` (NAME.json), and the run settings
# alone (NAME.run.json, the text of posemb.lab.run). Usage: make.sh POSEMB_BINARY
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--d-model 16 --heads 2 --layers 1 --train-len 3 --alphabet 4 --batch 4 --micro-batch 2
      --warmup 1 --quiet)
for pe in learned learned-randomized sinusoidal rope t5-bias none; do
  "$bin" train "${tiny[@]}" --steps 2 --pe "$pe" --out "$tmp/$pe"
done
"$bin" train "${tiny[@]}" --pe learned --task reverse --steps 3 --stop-after 1 --out "$tmp/reverse"
for d in "$tmp"/*/; do
  name=$(basename "$d")
  /usr/bin/python3 - "$d/checkpoint.safetensors" "$here/$name.json" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
meta = json.loads(raw[8:8 + n])["__metadata__"]
json.dump(meta, open(sys.argv[2], "w"), indent=1, sort_keys=True)
open(sys.argv[2][:-len(".json")] + ".run.json", "w").write(meta["posemb.lab.run"])
PY
done
