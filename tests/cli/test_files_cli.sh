#!/usr/bin/env bash
# The file commands of the posemb CLI: inspect, resize, convert. Exit codes (0 / 1 / 2),
# one-line errors, output files checked with numpy (Debian's /usr/bin/python3).
# Usage: test_files_cli.sh POSEMB_BINARY PYTHON DATA_DIR
set -u
bin="$1"
py="$2"
data="$3"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

check_py() {  # check_py DESCRIPTION SCRIPT: the python script must exit 0
  if ! (cd "$tmp" && "$py" -c "$2"); then fail "$1"; fi
}

# A GPT-2-shaped table (1024 x 768) and a RoBERTa-like one (514 x 16, 2 reserved rows).
"$py" - "$tmp" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
pos = np.arange(1024)[:, None] / 10000 ** (np.arange(768)[None, :] / 768)
wpe = (0.02 * rng.standard_normal((1024, 768)) + 0.1 * np.sin(pos)).astype("<f4")
np.save(os.path.join(d, "gpt2.npy"), wpe)
r = rng.standard_normal((514, 16)).astype("<f4")
b = r.tobytes()
h = json.dumps({"roberta.embeddings.position_embeddings.weight":
                {"dtype": "F32", "shape": [514, 16], "data_offsets": [0, len(b)]}}).encode()
open(os.path.join(d, "roberta.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b)
np.save(os.path.join(d, "roberta.npy"), r)
PY

# convert: .npy -> safetensors -> .npy, bit-exact.
expect 0 "convert npy to safetensors" -- convert "$tmp/gpt2.npy" "$tmp/gpt2.safetensors" --name transformer.wpe.weight
expect 0 "convert back to npy" -- convert "$tmp/gpt2.safetensors" "$tmp/back.npy"
contains out "transformer.wpe.weight" "convert reports the tensor"
check_py "npy -> safetensors -> npy is bit-exact" "
import numpy as np
a = np.load('gpt2.npy'); b = np.load('back.npy')
assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()"
expect 0 "convert to bf16" -- convert "$tmp/gpt2.npy" "$tmp/gpt2-bf16.safetensors" --dtype bf16
expect 0 "inspect bf16" -- inspect "$tmp/gpt2-bf16.safetensors"
contains out "dtype BF16" "inspect shows the dtype"

# inspect on the GPT-2-shaped table with a heatmap, timed.
start=$(date +%s%N)
expect 0 "inspect gpt2 with plot" -- inspect "$tmp/gpt2.safetensors" --plot "$tmp/heat.png"
end=$(date +%s%N)
echo "inspect 1024 x 768 with heatmap: $(( (end - start) / 1000000 )) ms"
cat "$tmp/out"
contains out "1024 x 768" "inspect shows the shape"
contains out "dtype F32" "inspect shows the dtype"
contains out "reserved rows:   0" "inspect shows reserved rows"
contains out "row norms" "inspect shows row norms"
contains out "d =    512" "inspect shows distances up to 512"
contains out "heatmap" "inspect reports the heatmap"
contains out "1024 x 1024 cells" "one heatmap cell per position"
check_py "heatmap is an RGB PNG of 1024 x 1024 cells with axes around them" "
import struct, zlib
b = open('heat.png', 'rb').read()
assert b[:8] == b'\x89PNG\r\n\x1a\n'
w, h, depth, ctype = struct.unpack('>IIBB', b[16:26])
assert (depth, ctype) == (8, 2), (depth, ctype)
assert 1024 + 100 <= w <= 1024 + 400 and 1024 + 60 <= h <= 1024 + 200, (w, h)"
[ -z "$(ls -A "$tmp" | grep '^\.posemb-')" ] || { fail "temporary files left"; }

# resize: RoBERTa with 2 reserved rows, 512 -> 2048 positions by copy.
expect 0 "resize copy" -- resize "$tmp/roberta.safetensors" --reserved-rows 2 --to 2048 --method copy -o "$tmp/long.safetensors"
contains out "512 -> 2048 positions by copy" "resize reports what it did"
contains out "common name" "resize reports how the table was found"
expect 0 "inspect the result" -- inspect "$tmp/long.safetensors"
contains out "reserved rows:   2" "reserved rows recorded in metadata"
contains out "2050 x 16" "result shape"
contains out "provenance:      'resize: copy 512 -> 2048" "provenance recorded"
expect 0 "resize to npy after truncate" -- resize "$tmp/long.safetensors" --to 512 --method truncate --reserved-rows 0 -o "$tmp/t.npy"
expect 0 "resize interpolate to npy" -- resize "$tmp/roberta.npy" --to 1000 --method interpolate -o "$tmp/i.npy"
expect 0 "resize random" -- resize "$tmp/roberta.npy" --to 600 --method random --seed 5 --std 0.1 -o "$tmp/r1.safetensors"
expect 0 "resize random again" -- resize "$tmp/roberta.npy" --to 600 --method random --seed 5 --std 0.1 -o "$tmp/r2.safetensors"
expect 0 "convert random to npy" -- convert "$tmp/r1.safetensors" "$tmp/r1.npy"
expect 0 "convert random to npy" -- convert "$tmp/r2.safetensors" "$tmp/r2.npy"
check_py "resize results" "
import numpy as np, json, struct
r = np.load('roberta.npy')
raw = open('long.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8+n]); name = h['__metadata__']['posemb.tensor']
lo, hi = h[name]['data_offsets']
L = np.frombuffer(raw[8+n+lo:8+n+hi], dtype='<f4').reshape(h[name]['shape'])
assert L.shape == (2050, 16)
assert (L[:2] == r[:2]).all(), 'reserved rows in place'
for p in range(2048): assert (L[2 + p] == r[2 + p % 512]).all(), p
t = np.load('t.npy'); assert t.shape == (512, 16) and (t == L[:512]).all()
i = np.load('i.npy'); assert i.shape == (1000, 16) and (i[0] == r[0]).all() and (i[-1] == r[-1]).all()
r1 = np.load('r1.npy'); r2 = np.load('r2.npy')
assert r1.tobytes() == r2.tobytes(), 'seeded'
assert (r1[:514] == r).all(), 'old rows kept'
assert 0.08 < r1[514:].std() < 0.12, r1[514:].std()"

# Whole checkpoints: synthetic files shaped like GPT-2, BERT (position_ids), RoBERTa (2
# reserved rows, the padding row all zeros), CLIP (text and vision towers) and ViT ((1, N, C)).
"$py" - "$tmp" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
def st(name, tensors, meta=None):
    h, off, data = {}, 0, b""
    if meta: h["__metadata__"] = meta
    for k, a in tensors.items():
        b = a.tobytes()
        dt = {"<f4": "F32", "<f2": "F16", "<i8": "I64"}[a.dtype.str]
        h[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); data += b
    hb = json.dumps(h).encode()
    open(os.path.join(d, name), "wb").write(struct.pack("<Q", len(hb)) + hb + data)
f = lambda *s: rng.standard_normal(s).astype("<f4")
st("gpt2ck.safetensors", {"wte.weight": f(50, 8), "wpe.weight": f(16, 8),
   "h.0.attn.bias": np.tril(np.ones((16, 16), "<f4"))[None, None], "h.0.mlp.c_fc.weight": f(8, 32)},
   {"format": "pt"})
st("bertck.safetensors", {"bert.embeddings.word_embeddings.weight": f(30, 8),
   "bert.embeddings.position_embeddings.weight": f(12, 8).astype("<f2"),
   "bert.embeddings.position_ids": np.arange(12, dtype="<i8")[None],
   "bert.embeddings.token_type_ids": np.zeros((1, 12), "<i8")})
r = f(14, 8); r[1] = 0
st("robertack.safetensors", {"roberta.embeddings.position_embeddings.weight": r,
   "roberta.embeddings.position_ids": np.arange(14, dtype="<i8")[None]})
st("clipck.safetensors", {"text_model.embeddings.position_embedding.weight": f(7, 8),
   "text_model.embeddings.position_ids": np.arange(7, dtype="<i8")[None],
   "vision_model.embeddings.position_embedding.weight": f(5, 8),
   "vision_model.embeddings.position_ids": np.arange(5, dtype="<i8")[None]})
st("vitck.safetensors", {"vit.embeddings.cls_token": f(1, 1, 8),
   "vit.embeddings.position_embeddings": f(1, 5, 8)})
PY
load_st='
import json, struct
import numpy as np
def load(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8+n])
    dt = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
    out = {k: np.frombuffer(raw[8+n+v["data_offsets"][0]:8+n+v["data_offsets"][1]], dt[v["dtype"]]).reshape(v["shape"])
           for k, v in h.items() if k != "__metadata__"}
    return out, h.get("__metadata__", {}), [k for k in h if k != "__metadata__"]
'
expect 0 "resize a GPT-2-like checkpoint" -- resize "$tmp/gpt2ck.safetensors" --to 32 --method copy -o "$tmp/gpt2-long.safetensors"
contains out "the whole file, 4 tensors" "resize writes the whole checkpoint"
contains err "h.0.attn.bias" "the (1, 1, L, L) mask kept with the old length is named"
contains out "max_position_embeddings" "the note on the model's config"
check_py "GPT-2: every other tensor and the metadata kept, the table tiled" "$load_st
a, ma, oa = load('gpt2ck.safetensors'); b, mb, ob = load('gpt2-long.safetensors')
assert oa == ob, (oa, ob)
for k in a:
    if k != 'wpe.weight': assert a[k].tobytes() == b[k].tobytes() and a[k].shape == b[k].shape, k
assert b['wpe.weight'].shape == (32, 8) and (b['wpe.weight'] == np.tile(a['wpe.weight'], (2, 1))).all()
assert mb['format'] == 'pt' and mb['posemb.tensor'] == 'wpe.weight'
assert 'copy 16 -> 32' in mb['posemb.provenance'], mb
r = json.loads(mb['posemb.resizes'])
assert [(x['operation'], x['method'], x['from_positions'], x['to_positions'], x['source_tensor']) for x in r] == [('resize', 'copy', 16, 32, 'wpe.weight')], r"
# A file resized before posemb.resizes existed: its text read back as records, the new resize added.
expect 0 "resize an old-format file" -- resize "$data/provenance/resized-before-posemb-resizes.safetensors" --to 10 --method copy -o "$tmp/old-more.safetensors"
contains out "8 -> 10 positions by copy (1 reserved rows kept)" "the old file's reserved rows kept"
check_py "the old resizes become records" "$load_st
b, mb, ob = load('old-more.safetensors')
r = json.loads(mb['posemb.resizes'])
assert [(x['method'], x['from_positions'], x['to_positions']) for x in r] == [('random', 5, 9), ('sinusoidal', 9, 11), ('truncate', 11, 8), ('copy', 8, 10)], r
assert r[0]['seed'] == 7 and r[0]['stddev'] == 0.5 and r[1]['scale'] > 0, r
assert mb['posemb.provenance'].endswith('; resize: copy 8 -> 10 positions, 1 reserved rows kept, from \'$data/provenance/resized-before-posemb-resizes.safetensors\' tensor \'wpe.weight\''), mb"
expect 0 "--table-only" -- resize "$tmp/gpt2ck.safetensors" --to 32 --method copy --table-only -o "$tmp/gpt2-table.safetensors"
check_py "--table-only writes the table alone" "$load_st
b, mb, ob = load('gpt2-table.safetensors'); assert ob == ['wpe.weight'], ob"
expect 0 "resize a BERT-like checkpoint" -- resize "$tmp/bertck.safetensors" --to 40 --method interpolate -o "$tmp/bert-long.safetensors"
contains out "bert.embeddings.position_ids: [1, 12] -> [1, 40]" "position_ids extended"
check_py "BERT: position_ids count on, token_type_ids stay 0, the table stays F16" "$load_st
b, mb, ob = load('bert-long.safetensors')
assert (b['bert.embeddings.position_ids'] == np.arange(40)[None]).all()
assert b['bert.embeddings.token_type_ids'].shape == (1, 40) and not b['bert.embeddings.token_type_ids'].any()
assert b['bert.embeddings.position_embeddings.weight'].dtype == np.float16
assert b['bert.embeddings.position_embeddings.weight'].shape == (40, 8)"
expect 0 "RoBERTa without --reserved-rows: a warning, not an error" -- resize "$tmp/robertack.safetensors" --to 24 --method copy -o "$tmp/rob-a.safetensors"
contains err "warning" "the likely reserved rows are warned about"
contains err "--reserved-rows 2" "the warning says what to pass"
one_line "RoBERTa warning"
expect 0 "RoBERTa with --reserved-rows 2" -- resize "$tmp/robertack.safetensors" --reserved-rows 2 --to 24 --method copy -o "$tmp/rob-b.safetensors"
[ -s "$tmp/err" ] && fail "a warning although --reserved-rows was given: $(cat "$tmp/err")"
check_py "RoBERTa: reserved rows in place, positions tiled, ids over every row" "$load_st
a, _, _ = load('robertack.safetensors'); b, mb, _ = load('rob-b.safetensors')
t, u = a['roberta.embeddings.position_embeddings.weight'], b['roberta.embeddings.position_embeddings.weight']
assert u.shape == (26, 8) and (u[:2] == t[:2]).all()
assert all((u[2 + p] == t[2 + p % 12]).all() for p in range(24))
assert (b['roberta.embeddings.position_ids'] == np.arange(26)[None]).all()
assert mb['posemb.reserved_rows'] == '2'"
expect 0 "inspect warns about the likely reserved rows too" -- inspect "$tmp/robertack.safetensors"
contains err "--reserved-rows 2" "inspect warns"
# .npy output of a table with reserved rows: the same in resize and convert (every row, a warning).
expect 0 "resize a table with 2 reserved rows to .npy" -- resize "$tmp/rob-b.safetensors" --to 24 --method copy -o "$tmp/rob-r.npy"
contains err "--reserved-rows 2 when reading it" "resize warns that .npy cannot record reserved rows"
expect 0 "convert a table with 2 reserved rows to .npy" -- convert "$tmp/rob-b.safetensors" "$tmp/rob-c.npy"
contains err "--reserved-rows 2 when reading it" "convert warns the same way"
expect 0 "convert a RoBERTa table with a zero row to .npy" -- convert "$tmp/robertack.safetensors" "$tmp/rob-d.npy"
contains err "look reserved" "convert warns about likely reserved rows"
check_py "both .npy files hold every row" "
import numpy as np
r, c = np.load('rob-r.npy'), np.load('rob-c.npy')
assert r.shape == c.shape == (26, 8) and (r == c).all()"
expect 1 "CLIP text and vision: name the one" -- resize "$tmp/clipck.safetensors" --to 10 --method copy -o "$tmp/clip-long.safetensors"
contains err "text_model.embeddings.position_embedding.weight" "CLIP text table listed"
contains err "vision_model.embeddings.position_embedding.weight" "CLIP vision table listed"
expect 0 "CLIP text tower" -- resize "$tmp/clipck.safetensors" --tensor text_model.embeddings.position_embedding.weight --to 10 --method interpolate -o "$tmp/clip-long.safetensors"
check_py "CLIP: the text tower's ids extended, the vision tower untouched" "$load_st
a, _, _ = load('clipck.safetensors'); b, _, _ = load('clip-long.safetensors')
assert (b['text_model.embeddings.position_ids'] == np.arange(10)[None]).all()
assert b['text_model.embeddings.position_embedding.weight'].shape == (10, 8)
for k in ('vision_model.embeddings.position_embedding.weight', 'vision_model.embeddings.position_ids'):
    assert a[k].tobytes() == b[k].tobytes(), k"
# A vision table is resized as a 2-D grid (issue 22; tests/cli/test_vision_cli.sh): a 1-D method
# is refused, --to counts rows (the class token included).
expect 2 "ViT (1, N, C) with a 1-D method" -- resize "$tmp/vitck.safetensors" --reserved-rows 1 --to 8 --method interpolate -o "$tmp/vit-long.safetensors"
contains err "bicubic, bilinear or sincos" "the grid methods are named"
expect 0 "ViT (1, N, C)" -- resize "$tmp/vitck.safetensors" --to 10 --method bilinear -o "$tmp/vit-long.safetensors"
contains out "[1, 10, 8]" "the stored shape (1, N, C) is kept"
contains out "1 prefix token" "the ViT class token is pointed out"
check_py "ViT: written back as (1, N, C), class row in place" "$load_st
a, _, _ = load('vitck.safetensors'); b, _, _ = load('vit-long.safetensors')
t, u = a['vit.embeddings.position_embeddings'], b['vit.embeddings.position_embeddings']
assert u.shape == (1, 10, 8) and (u[0, 0] == t[0, 0]).all() and (u[0, -1] == t[0, -1]).all()
assert a['vit.embeddings.cls_token'].tobytes() == b['vit.embeddings.cls_token'].tobytes()"
expect 0 "resize by sinusoidal" -- resize "$tmp/gpt2ck.safetensors" --to 40 --method sinusoidal --table-only -o "$tmp/sin.npy"
check_py "sinusoidal: old rows kept, new rows scaled to their mean norm" "$load_st
a, _, _ = load('gpt2ck.safetensors'); t = a['wpe.weight']; s = np.load('sin.npy')
assert s.shape == (40, 8) and (s[:16] == t).all()
old = np.linalg.norm(t, axis=1).mean(); new = np.linalg.norm(s[16:], axis=1).mean()
assert abs(new - old) < 1e-5 * old, (new, old)"
expect 0 "convert a BERT-like checkpoint with I64 ids" -- convert "$tmp/bertck.safetensors" "$tmp/bert-copy.safetensors"
contains out "4 tensor(s)" "every tensor converted"

# Errors: usage (2) and runtime (1), one line each.
expect 2 "resize without --to" -- resize "$tmp/roberta.npy" --method copy -o "$tmp/x.npy"
one_line "resize without --to"
expect 2 "unknown method" -- resize "$tmp/roberta.npy" --to 600 --method stretch -o "$tmp/x.npy"
expect 2 "too many reserved rows" -- inspect "$tmp/roberta.npy" --reserved-rows 600
one_line "too many reserved rows"
expect 1 "shrink with copy" -- resize "$tmp/roberta.npy" --to 10 --method copy -o "$tmp/x.npy"
contains err "shrink with truncate" "shrink error says what to do"
one_line "shrink with copy"
expect 1 "missing file" -- inspect "$tmp/absent.safetensors"
contains err "absent.safetensors" "missing file named"
expect 1 "malformed file" -- inspect "$data/malformed/overlap.safetensors"
contains err "overlap.safetensors" "malformed file named"
contains err "overlap" "malformed problem named"
one_line "malformed file"
expect 1 "complex npy" -- convert "$data/malformed/complex64.npy" "$tmp/x.safetensors"
contains err "'<c8' is not supported" "unsupported dtype named"
[ ! -e "$tmp/x.safetensors" ] || { fail "a failed convert wrote its output"; }
# A table numpy saved in Fortran order and big-endian (np.save of a transposed, byte-swapped
# array) converts to the same table in C order, little-endian.
"$py" - "$tmp" <<'PY'
import sys, os
import numpy as np
d = sys.argv[1]
a = np.random.default_rng(5).standard_normal((12, 7)).astype("<f4")
np.save(os.path.join(d, "fortran_be.npy"), np.asfortranarray(a).astype(">f4"))
np.save(os.path.join(d, "fortran_be_expected.npy"), a)
PY
expect 0 "fortran big-endian npy" -- convert "$tmp/fortran_be.npy" "$tmp/fortran_be.safetensors" --name wpe.weight
"$py" - "$tmp" <<'PY' || fail "a Fortran-order big-endian .npy did not convert to its table"
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
raw = open(os.path.join(d, "fortran_be.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
e = json.loads(raw[8:8 + n])["wpe.weight"]
assert e["dtype"] == "F32" and e["shape"] == [12, 7], e
got = np.frombuffer(raw[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]], "<f4").reshape(12, 7)
assert got.tobytes() == np.load(os.path.join(d, "fortran_be_expected.npy")).tobytes()
PY
"$py" - "$tmp" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
a = np.zeros((4, 3), dtype="<f4"); a[2, 1] = np.nan
b = a.tobytes()
h = json.dumps({"model.encoder.embed_positions.weight": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]},
                "model.decoder.embed_positions.weight": {"dtype": "F32", "shape": [4, 3], "data_offsets": [48, 96]}}).encode()
open(os.path.join(d, "bart.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b + np.ones((4, 3), "<f4").tobytes())
PY
expect 1 "ambiguous table" -- inspect "$tmp/bart.safetensors"
contains err "model.encoder.embed_positions.weight" "candidates listed"
contains err "name the one to use" "ambiguity says what to do"
expect 0 "--tensor resolves" -- inspect "$tmp/bart.safetensors" --tensor model.decoder.embed_positions.weight
expect 1 "NaN in a table being resized" -- resize "$tmp/bart.safetensors" --tensor model.encoder.embed_positions.weight --to 8 --method copy -o "$tmp/n.safetensors"
contains err "NaN at row 2, column 1" "NaN located"
contains err "bart.safetensors" "NaN error names the file"
[ ! -e "$tmp/n.safetensors" ] || { fail "a refused resize wrote its output"; }
expect 1 "NaN in a table being inspected" -- inspect "$tmp/bart.safetensors" --tensor model.encoder.embed_positions.weight
contains err "NaN at row 2, column 1" "NaN located at load"
one_line "NaN in a table being inspected"
expect 1 "random resize with a standard deviation beyond float" -- resize "$tmp/roberta.npy" --to 600 --method random --std 1e300 -o "$tmp/x.npy"
contains err "not a positive finite float" "std 1e300 refused"
[ ! -e "$tmp/x.npy" ] || { fail "a refused resize wrote its output"; }

# Hostile inputs: not a tensor file, a FIFO (no hang), a table of 2^40 empty rows (no hang).
expect 1 "bad .npy magic" -- inspect "$data/malformed/bad_magic.npy"
contains err "neither a .npy nor a safetensors file" "format detected once, by content"
mkfifo "$tmp/fifo"
fifo_case() {  # fifo_case ARGS...: posemb ARGS on the FIFO must refuse it at once, exit 1
  timeout 20 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq 1 ] || fail "posemb $1 on a FIFO exited $got, expected 1 (124: it hung)"
  contains err "not a regular file (a FIFO)" "FIFO input refused by $1"
}
fifo_case inspect "$tmp/fifo"
fifo_case resize "$tmp/fifo" --to 8 --method copy -o "$tmp/x.npy"
fifo_case convert "$tmp/fifo" "$tmp/x.npy"
"$py" - "$tmp" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
h = json.dumps({"wpe.weight": {"dtype": "F32", "shape": [1 << 40, 0], "data_offsets": [0, 0]}}).encode()
open(os.path.join(d, "tall.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h)
with open(os.path.join(d, "tall.npy"), "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40, 0)})
np.save(os.path.join(d, "nan.npy"), np.array([[0.0, np.inf], [1.0, 2.0]], dtype="<f4"))
# A valid table whose name and metadata hold terminal escapes.
t = np.ones((4, 2), "<f4").tobytes()
h = json.dumps({"__metadata__": {"posemb.tensor": "wpe\x1b[31m", "posemb.provenance": "made \x1b]0;pwned\x07 here"},
                "wpe\x1b[31m": {"dtype": "F32", "shape": [4, 2], "data_offsets": [0, 32]}}).encode()
open(os.path.join(d, "escape.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + t)
PY
for f in tall.safetensors tall.npy; do
  timeout 20 "$bin" inspect "$tmp/$f" >"$tmp/out" 2>"$tmp/err"
  got=$?
  [ "$got" -eq 1 ] || fail "inspect of a [2^40, 0] table exited $got, expected 1 (124: it hung)"
  contains err "needs at least one column" "[2^40, 0] refused"
  timeout 20 "$bin" resize "$tmp/$f" --to 5 --method truncate -o "$tmp/x.npy" >"$tmp/out" 2>"$tmp/err"
  got=$?
  [ "$got" -eq 1 ] || fail "resize --method truncate of a [2^40, 0] table exited $got, expected 1"
done
expect 1 "infinity in a .npy table" -- inspect "$tmp/nan.npy"
contains err "+infinity at row 0, column 1" "infinity located"
expect 0 "inspect a table named with escapes" -- inspect "$tmp/escape.safetensors"
contains out "'wpe\x1b[31m'" "the name is shown escaped"
contains out "made \x1b]0;pwned\x07 here" "the provenance is shown escaped"
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/out"; then fail "a raw escape byte reached stdout"; fi

# Outputs: only regular files are replaced; long names; modes.
for out in /dev/null /dev/full /dev/stdout "$tmp/fifo"; do
  expect 1 "convert to $out" -- convert "$data/valid/v1.npy" "$out"
  one_line "convert to $out"
  contains err "posemb replaces only regular files" "output $out refused"
done
[ -c /dev/full ] && [ -c /dev/null ] || fail "a device node was replaced"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
long="$tmp/$(printf 'n%.0s' $(seq 1 250))"
expect 0 "a 250-character output name" -- convert "$data/valid/v1.npy" "$long"
[ -f "$long" ] || fail "the 250-character output was not written"
(umask 077 && "$bin" convert "$data/valid/v1.npy" "$tmp/private.safetensors" >/dev/null)
[ "$(stat -c %a "$tmp/private.safetensors")" = 600 ] || fail "umask 077 not respected"
chmod 640 "$tmp/private.safetensors"
expect 0 "replace a 0640 file" -- convert "$data/valid/v1.npy" "$tmp/private.safetensors"
[ "$(stat -c %a "$tmp/private.safetensors")" = 640 ] || fail "a replaced file lost its mode"

# convert passes non-float tensors through: BERT's I64 position_ids survive an F32 conversion.
expect 0 "convert a BERT-like checkpoint to f32" -- convert "$data/valid/bert_like_f16.safetensors" "$tmp/bert32.safetensors" --dtype f32
check_py "integer tensors pass through, float tensors converted exactly" "
import json, struct
import numpy as np
def load(p):
    raw = open(p, 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8+n])
    return h, raw[8+n:]
hi, di = load('$data/valid/bert_like_f16.safetensors'); ho, do = load('bert32.safetensors')
k = 'bert.embeddings.position_ids'
assert ho[k]['dtype'] == 'I64' and ho[k]['shape'] == hi[k]['shape']
assert do[slice(*ho[k]['data_offsets'])] == di[slice(*hi[k]['data_offsets'])]
k = 'bert.embeddings.position_embeddings.weight'
a = np.frombuffer(di[slice(*hi[k]['data_offsets'])], '<f2').astype('<f4')
assert ho[k]['dtype'] == 'F32' and np.frombuffer(do[slice(*ho[k]['data_offsets'])], '<f4').tobytes() == a.tobytes()"

# SIGTERM during a large write: the handler removes the temporary, the old output stays.
"$py" -c "import numpy as np; np.save('$tmp/wide.npy', np.ones((512, 64), '<f4'))"
mkdir "$tmp/sig"
printf 'old output' >"$tmp/sig/out.safetensors"
"$bin" resize "$tmp/wide.npy" --to 2000000 --method copy -o "$tmp/sig/out.safetensors" >/dev/null 2>&1 &
pid=$!
caught=0
for _ in $(seq 1 6000); do
  if ls -A "$tmp/sig" | grep -q '^\.posemb-'; then
    kill -STOP "$pid"
    if ls -A "$tmp/sig" | grep -q '^\.posemb-'; then
      kill -TERM "$pid"
      kill -CONT "$pid"
      caught=1
      break
    fi
    kill -CONT "$pid"
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.005
done
wait "$pid"
status=$?
[ "$caught" -eq 1 ] || fail "the 512 MB write ended before SIGTERM could be sent during it"
[ "$status" -eq 143 ] || fail "posemb resize ended with status $status after SIGTERM, expected 143"
[ -z "$(ls -A "$tmp/sig" | grep '^\.posemb-')" ] || fail "a partial temporary survived SIGTERM"
[ "$(cat "$tmp/sig/out.safetensors")" = "old output" ] || fail "the old output was not kept"

finish "files cli"
