#!/usr/bin/env bash
# `posemb rope`: a config.json's rotary embedding (text and --json, checked against numpy
# reimplementations of transformers' formulas), --seq-len for dynamic and longrope, --precision,
# warnings for unused keys, --set writing a new rope_scaling block with every other key kept;
# bad configs: exit 1, one line naming the file and the key, nothing written; usage errors: 2.
# Usage: test_rope_cli.sh POSEMB_BINARY PYTHON
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

check_py() {  # check_py DESCRIPTION SCRIPT: the python script (reading out.json) must exit 0
  if ! (cd "$tmp" && "$py" -c "$2"); then fail "$1"; fi
}
absent() {  # absent FILE DESCRIPTION
  [ ! -e "$tmp/$1" ] || fail "$2: $1 was written"
}

"$py" - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
def put(name, cfg, text=None):
    with open(os.path.join(d, name), "w") as f:
        f.write(text if text is not None else json.dumps(cfg, indent=2))
llama2 = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
          "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
          "rope_scaling": None, "torch_dtype": "float16", "vocab_size": 32000}
put("llama2.json", llama2)
put("llama31.json", dict(llama2, max_position_embeddings=131072, rope_theta=500000.0,
    rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"}))
put("yarn.json", dict(llama2, hidden_size=2048, num_attention_heads=16, rope_theta=1e6,
    max_position_embeddings=32768, rope_scaling={"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 32768, "beta_fast": 16}))
put("phi3.json", {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
    "rope_scaling": {"type": "longrope", "short_factor": [1 + 0.01 * i for i in range(48)],
                     "long_factor": [1 + 1.5 * i for i in range(48)]}})
put("dynamic.json", dict(llama2, rope_scaling={"type": "dynamic", "factor": 2.0}))
put("far.json", dict(llama2, hidden_size=64, num_attention_heads=4, max_position_embeddings=70000))
put("unused.json", dict(llama2, rope_scaling={"type": "linear", "factor": 2.0, "fancy": 1}))
bad = dict(llama2)
del bad["max_position_embeddings"]
put("no_length.json", bad)
bad = dict(llama2)
del bad["rope_theta"]
put("no_theta.json", bad)
put("short_list.json", {"hidden_size": 3072, "num_attention_heads": 32,
    "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
    "rope_theta": 10000.0, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48,
    "long_factor": [1.0] * 47}})
put("xpos.json", dict(llama2, rope_scaling={"rope_type": "xpos", "factor": 2.0}))
put("not_json.json", None, '{"rope_theta": 10000,')
# 100,000 levels of arrays crashed the tool (the parser's recursion ran out of stack).
put("deep.json", None, '{"x": ' + "[" * 100000 + "]" * 100000 + ', "hidden_size": 4096, '
    '"num_attention_heads": 32, "max_position_embeddings": 4096}')
PY

# What the config gives, pair by pair.
expect 0 "llama 3.1" -- rope "$tmp/llama31.json"
contains out "rope_type llama3, head_dim 128, rotary_dim 128 (64 pairs), base 500000" "header"
contains out "lengths: trained 8192, extended 131072" "lengths"
for t in extrapolated blended interpolated; do contains out " $t" "llama3 pairs $t"; done
expect 0 "llama 3.1 json" -- rope "$tmp/llama31.json" --json
cp "$tmp/out" "$tmp/llama31.out.json"
check_py "llama3 inverse frequencies as transformers' formula" "
import json, math
import numpy as np
r = json.load(open('llama31.out.json'))
assert r['rope_type'] == 'llama3' and r['rotary_dim'] == 128 and r['attention_factor'] == 1.0
inv = 1.0 / 500000.0 ** (np.arange(0, 128, 2) / 128)
wl = 2 * math.pi / inv
smooth = (8192 / wl - 1) / (4 - 1)
want = np.where(wl < 8192 / 4, inv, np.where(wl > 8192, inv / 8, (1 - smooth) * inv / 8 + smooth * inv))
np.testing.assert_allclose(r['inv_freq'], want, rtol=1e-12, atol=0)
np.testing.assert_allclose(r['wavelengths'], 2 * math.pi / want, rtol=1e-12, atol=0)
assert len(r['treatment']) == 64 and r['warnings'] == []"

expect 0 "yarn json" -- rope "$tmp/yarn.json" --json
cp "$tmp/out" "$tmp/yarn.out.json"
check_py "yarn (beta_fast 16) as transformers' formula" "
import json, math
import numpy as np
r = json.load(open('yarn.out.json'))
dim, base, s, L = 128, 1e6, 4.0, 32768
corr = lambda rot: dim * math.log(L / (rot * 2 * math.pi)) / (2 * math.log(base))
lo, hi = max(math.floor(corr(16)), 0), min(math.ceil(corr(1)), dim - 1)
ramp = np.clip((np.arange(dim // 2) - lo) / (hi - lo), 0, 1)
pos = base ** (np.arange(0, dim, 2) / dim)
want = (1 / (s * pos)) * ramp + (1 / pos) * (1 - ramp)
np.testing.assert_allclose(r['inv_freq'], want, rtol=1e-12, atol=0)
assert abs(r['attention_factor'] - (0.1 * math.log(4) + 1)) < 1e-15
assert r['extended_length'] == 131072"

# --seq-len: longrope's short factors up to the trained length, the long ones past it; dynamic
# NTK's base.
for n in 4096 4097; do
  expect 0 "phi3 at $n" -- rope "$tmp/phi3.json" --json --seq-len "$n"
  cp "$tmp/out" "$tmp/phi3.$n.json"
done
check_py "longrope switches at 4096" "
import json, math
import numpy as np
base = 10000.0 ** (np.arange(0, 96, 2) / 96)
for n, f in ((4096, [1 + 0.01 * i for i in range(48)]), (4097, [1 + 1.5 * i for i in range(48)])):
    r = json.load(open('phi3.%d.json' % n))
    np.testing.assert_allclose(r['inv_freq'], 1 / (np.array(f) * base), rtol=1e-12, atol=0)
    assert r['long_factors'] == (n > 4096)
    assert abs(r['attention_factor'] - math.sqrt(1 + math.log(32) / math.log(4096))) < 1e-15"
expect 0 "phi3 text" -- rope "$tmp/phi3.json" --seq-len 5000
contains out "(long_factor)" "longrope says which list"
expect 0 "dynamic at 10000" -- rope "$tmp/dynamic.json" --json --seq-len 10000
check_py "dynamic NTK's base at 10000" "
import json
r = json.load(open('out'))
want = 10000 * (2 * 10000 / 4096 - 1) ** (128 / 126)
assert abs(r['base_in_effect'] - want) < 1e-9 * want, r['base_in_effect']"

# --precision: float16 angles overflow at 65520; bfloat16's break early.
expect 0 "precision" -- rope "$tmp/far.json" --precision
contains out "float16" "precision table"
contains out "65520" "float16 overflows at 65520"
expect 0 "precision json" -- rope "$tmp/far.json" --precision --json
check_py "precision json" "
import json
p = json.load(open('out'))['precision']
assert p['positions'] == 70000
assert p['float16']['first_overflow'] == 65520 and p['float32']['first_overflow'] is None
assert p['bfloat16']['first_over'] < 300 and p['float32']['max_error'] < 0.01"

# No rope_theta (Llama 2's own config): transformers' default, with a warning.
expect 0 "no rope_theta" -- rope "$tmp/no_theta.json"
contains err "rope_theta is missing: 10000 is used" "the default said aloud"
contains out "base 10000" "the default used"

# An unused key: a warning, the report still printed.
expect 0 "unused key" -- rope "$tmp/unused.json"
contains err "posemb: warning:" "warning printed"
contains err "'fancy' is not used by 'linear'" "warning names the key"

# --set: a new block, every other key kept, what it targets.
expect 0 "set yarn" -- rope "$tmp/llama2.json" --set yarn --factor 4 -o "$tmp/long.json"
contains out "lengths: trained 4096, extended 16384 (4 x the trained 4096)" "set says its target"
check_py "set kept every other key in order" "
import json
a, b = json.load(open('llama2.json')), json.load(open('long.json'))
assert list(a) == list(b), (list(a), list(b))
assert all(a[k] == b[k] for k in a if k != 'rope_scaling')
assert b['rope_scaling'] == {'rope_type': 'yarn', 'factor': 4.0,
                             'original_max_position_embeddings': 4096}, b['rope_scaling']"
expect 0 "read the written config" -- rope "$tmp/long.json"
contains out "rope_type yarn" "the written config reads back"
contains out "lengths: trained 4096, extended 16384;" "rope shows the lengths --set said"
expect 0 "set llama3" -- rope "$tmp/llama2.json" --set llama3 --factor 8 --original-length 2048 -o "$tmp/l3.json"
contains out "lengths: trained 2048, extended 4096 (max_position_embeddings, how far transformers runs the model; 8 x the trained 2048 would be 16384)" "llama3 lengths: max_position_embeddings decides"
expect 0 "read the llama3 config" -- rope "$tmp/l3.json"
contains out "lengths: trained 2048, extended 4096;" "rope shows the lengths --set said (llama3)"
expect 0 "set default" -- rope "$tmp/llama31.json" --set default -o "$tmp/plain.json"
check_py "set default writes null" "
import json
assert json.load(open('plain.json'))['rope_scaling'] is None"
[ -z "$(ls -A "$tmp" | grep '^\.posemb-')" ] || fail "temporary files left"

# Bad configs: exit 1, one line naming the file and the key, nothing written.
bad_config() {  # bad_config FILE KEY
  expect 1 "$1" -- rope "$tmp/$1"
  one_line "$1"
  contains err "$1" "$1: the file named"
  contains err "$2" "$1: the key named"
  expect 1 "$1 --set" -- rope "$tmp/$1" --set linear --factor 2 -o "$tmp/never.json"
  one_line "$1 --set"
  absent never.json "$1 --set"
}
bad_config no_length.json "max_position_embeddings"
bad_config short_list.json "rope_scaling.long_factor"
bad_config xpos.json "rope_scaling.rope_type"
bad_config not_json.json "not valid JSON"
bad_config deep.json "at most 64 deep"
expect 1 "missing file" -- rope "$tmp/nothing.json"
one_line "missing file"

# Usage errors: exit 2, nothing written; an existing output left as it was.
cp "$tmp/long.json" "$tmp/keep.json"
expect 2 "longrope cannot be set" -- rope "$tmp/llama2.json" --set longrope --factor 2 -o "$tmp/keep.json"
expect 2 "ntk cannot be set" -- rope "$tmp/llama2.json" --set ntk --factor 2 -o "$tmp/keep.json"
expect 2 "--set without -o" -- rope "$tmp/llama2.json" --set yarn --factor 2
expect 2 "-o without --set" -- rope "$tmp/llama2.json" -o "$tmp/keep.json"
expect 2 "--factor without --set" -- rope "$tmp/llama2.json" --factor 2
expect 2 "--set without --factor" -- rope "$tmp/llama2.json" --set yarn -o "$tmp/keep.json"
one_line "--set without --factor"
contains err "needs a factor" "the factor asked for"
expect 2 "beta with llama3" -- rope "$tmp/llama2.json" --set llama3 --factor 8 --beta-fast 3 -o "$tmp/keep.json"
contains err "beta_fast applies to 'yarn'" "the parameter named"
expect 2 "factor below 1" -- rope "$tmp/llama2.json" --set linear --factor 0.5 -o "$tmp/keep.json"
# Values that make no valid scaling are the flags' fault (a usage error), not the file's.
expect 2 "llama3 with low above high" -- rope "$tmp/llama2.json" --set llama3 --factor 8 \
  --low-freq-factor 4 --high-freq-factor 1 -o "$tmp/keep.json"
one_line "llama3 with low above high"
contains err "the new rope_scaling does not fit" "the edit, not the file, is blamed"
contains err "rope_scaling.high_freq_factor" "the key named"
expect 2 "--set with --json" -- rope "$tmp/llama2.json" --set linear --factor 2 --json -o "$tmp/keep.json"
expect 2 "bad --seq-len" -- rope "$tmp/llama2.json" --seq-len -3
expect 2 "no config" -- rope
cmp -s "$tmp/long.json" "$tmp/keep.json" || fail "a refused --set changed its output"

finish test_rope_cli
