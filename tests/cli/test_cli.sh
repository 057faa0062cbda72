#!/usr/bin/env bash
# The posemb CLI: exit codes (0 / 1 / 2), one-line errors on stderr, --help, --version, demo.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

expect 0 "help" -- --help
contains out "demo" "help lists the demo subcommand"
cp "$tmp/out" "$tmp/help_out"
expect 0 "version" -- --version
contains out "posemb 0." "version string"
expect 2 "no subcommand" --
one_line "no subcommand"
expect 2 "unknown flag" -- --no-such-flag
one_line "unknown flag"
contains err "usage error" "unknown flag says usage error"
contains err "--no-such-flag" "unknown flag is named"
contains err "see 'posemb --help'" "a top-level usage error points to posemb --help"
expect 2 "unknown subcommand" -- no-such-command
contains err "no-such-command" "unknown subcommand is named"
# A usage error in a subcommand points to that subcommand's --help: CLI11's own errors (an
# unknown flag, a value out of range) and the tool's (UsageError).
expect 2 "unknown train flag" -- train --no-such-flag
one_line "unknown train flag"
contains err "--no-such-flag" "unknown train flag is named"
contains err "see 'posemb train --help'" "train usage error points to posemb train --help"
expect 2 "bad train value" -- train --steps banana
contains err "see 'posemb train --help'" "bad train value points to posemb train --help"
expect 2 "train flags that contradict" -- train --pe rope --d-model 12 --heads 4
contains err "see 'posemb train --help'" "train UsageError points to posemb train --help"
expect 2 "resize without its file" -- resize
contains err "see 'posemb resize --help'" "resize usage error points to posemb resize --help"
expect 2 "a flag demo does not have" -- demo --max-seq-len 8 --seq-len 9
contains err "see 'posemb demo --help'" "demo usage error points to posemb demo --help"
expect 1 "runtime failure: missing file" -- inspect no-such-file.safetensors
one_line "runtime failure: missing file"
contains err "posemb: error: " "runtime failure says error"
expect 2 "bad demo value" -- demo --steps banana
one_line "bad demo value"
expect 2 "demo value out of range" -- demo --samples 0
expect 1 "runtime failure: not a checkpoint" -- eval --checkpoint "$bin" --lengths 1:2
one_line "runtime failure"
contains err "not a posemb lab checkpoint" "runtime error says what the file is not"
contains help_out "train" "help lists train"
contains help_out "eval" "help lists eval"
expect 0 "bench help" -- bench --help
contains out "--json" "bench help lists --json"
contains out "--lab-kernels" "bench help lists --lab-kernels"
expect 2 "bench with zero repetitions" -- bench --reps 0 --no-peer
one_line "bench with zero repetitions"
contains err "--reps" "bench usage error names the flag"
expect 2 "bench with a bad thread count" -- bench --threads 1,0 --no-peer
contains err "--threads" "bench thread-count error names the flag"
expect 2 "bench with a filter that matches no case" -- bench --filter no_such_case --no-peer --no-train-step
one_line "bench with a filter that matches no case"
contains err "--filter 'no_such_case'" "bench filter error names the flag and the text"
expect 0 "bench with a filter" -- bench --filter add_positions_backward/small --threads 1 --reps 1 --no-peer --no-train-step --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "bench --filter: the document holds only the matching cases and the copy"
import json, sys
d = json.load(open(sys.argv[1]))
names = {c["name"] for c in d["cases"]}
assert names == {"add_positions_backward/small"}, names
assert {c["impl"] for c in d["cases"]} >= {"posemb"}, d["cases"]
assert list(d["copy_GBps"]) == ["1"] and d["copy_GBps"]["1"] > 0, d["copy_GBps"]
PY
# A GPT-2 case keeps the machine's reference for that shape: its token rows read alone.
expect 0 "bench with a filter on the GPT-2 forward" -- bench --filter embed_forward/gpt2 --threads 1 --reps 1 --no-peer --no-train-step --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "bench --filter embed_forward/gpt2 keeps read_token_rows/gpt2"
import json, sys
d = json.load(open(sys.argv[1]))
cases = {(c["name"], c["impl"]): c for c in d["cases"]}
assert ("read_token_rows/gpt2", "machine") in cases, sorted(cases)
assert ("embed_forward/gpt2", "posemb") in cases, sorted(cases)
assert not any(n.endswith("/small") for n, _ in cases), sorted(cases)
r = cases[("read_token_rows/gpt2", "machine")]
assert r["bytes"] > 0 and r["seconds"] > 0 and r["fraction_of_copy_bandwidth"] > 0, r
PY
# --all-targets: each posemb case once per SIMD target the CPU runs, the peers once; the CPU named.
expect 0 "bench on every target" -- bench --all-targets --filter add_positions_forward/small --threads 1 --reps 1 --no-peer --no-train-step --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "bench --all-targets: one posemb case per target, the loop once, the CPU named"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["all_targets"] is True and d["simd_targets"][-1] == "baseline", d["simd_targets"]
ours = [c["simd"] for c in d["cases"] if c["impl"] == "posemb"]
assert ours == d["simd_targets"], (ours, d["simd_targets"])
assert [c["impl"] for c in d["cases"] if c["impl"] != "posemb"] == ["llm.c", "llm.c omp"], d["cases"]
assert all(c["peer_serial_seconds"] > 0 for c in d["cases"] if c["impl"] == "posemb"), d["cases"]
cpu = d["cpu"]
assert cpu["vendor"] and cpu["family"] > 0 and cpu["l1d_bytes"] > 0 and cpu["description"], cpu
PY
expect 0 "bench table on every target" -- bench --all-targets --filter add_positions_forward/small --threads 1 --reps 1 --no-peer --no-train-step
contains out "CPU: " "bench names the CPU in its header"
contains out "posemb baseline" "bench --all-targets names each posemb row's target"

# The training-step cases: --filter train_step runs both demo models' steps (no kernel case), each
# at its shape; the text case reads the default corpus (scripts/setup.sh test installs it).
expect 0 "bench the training steps" -- bench --filter train_step --threads 1 --reps 1 --no-peer --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "bench --filter train_step: both cases, their shapes, no kernel case"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cases"] == [], d["cases"]
steps = {t["name"]: t for t in d["train_step"]}
assert sorted(steps) == ["train_step/demo", "train_step/text"], sorted(steps)
assert steps["train_step/demo"]["shape"] == "B=32 T=34 C=64 L=2 H=4 F=256 V=12", steps
assert steps["train_step/text"]["shape"] == "B=16 T=64 C=64 L=2 H=4 F=256 V=256", steps
for t in steps.values():
    assert t["seconds"] > 0 and t["pytorch_seconds"] is None, t
    B, T = (int(f.split("=")[1]) for f in t["shape"].split()[:2])
    assert abs(t["tokens_per_second"] * t["seconds"] - B * T) < 1e-6 * B * T, t
PY
# Without the corpus the text case says why in the table (nothing else is measured).
POSEMB_CACHE_DIR="$tmp/no-cache" expect 0 "bench the text step without the corpus" -- \
  bench --filter train_step/text --threads 1 --reps 1 --no-peer
contains out "train_step/text (B=16 T=64 C=64 L=2 H=4 F=256 V=256): not measured (" \
  "the table says why the text case was not measured"
contains out "setup.sh corpus" "the table names the command that installs the corpus"
grep -qF "train_step/demo" "$tmp/out" && fail "--filter train_step/text runs train_step/demo too"
# The peer builds the text case's model: 256 byte values, 64 positions, every one predicted (its
# first loss near ln 256 = 5.55 from N(0, 0.02) weights).
/usr/bin/python3 "$(dirname "$0")/../../bench/peers/torch_model.py" --task text --train-len 64 \
  --batch 16 --d-model 64 --layers 2 --heads 4 --d-ff 256 --threads 1 --steps 1 --warmup 0 \
  >"$tmp/peer" 2>"$tmp/err" || fail "the PyTorch peer of train_step/text ran"
/usr/bin/python3 - "$tmp/peer" <<'PY' || fail "the PyTorch peer of train_step/text: its shape and loss"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["batch"] == 16 and d["seq_len"] == 64 and d["step_seconds"] > 0, d
assert abs(d["last_loss"] - math.log(256)) < 0.05, d
PY

finish "cli"
