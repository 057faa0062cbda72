#!/usr/bin/env bash
# Vision tables resized as 2-D grids and Hugging Face checkpoint folders through the CLI
# (issue 22): `posemb resize FILE --grid HxW`, `--to N` on a vision table, `posemb resize DIR`,
# `posemb inspect DIR`. Fixtures are generated here (small tensors); results are checked with
# numpy and torch (Debian's /usr/bin/python3).
# Usage: test_vision_cli.sh POSEMB_BINARY PYTHON
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

check_py() {  # check_py DESCRIPTION SCRIPT: the python script must exit 0
  if ! (cd "$tmp" && "$py" -c "$2"); then fail "$1"; fi
}

# The fixtures: vision files (ViT (1, 197, 16), DeiT distilled (1, 198, 16), CLIP vision (50, 16)
# with position_ids, a non-square 12x20 ViT grid), a GPT-2 file, and two folders: GPT-2-shaped in
# 2 shards (the table in the second) and a ViT (image_size 224, patch_size 16).
"$py" - "$tmp" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(22)
f = lambda *s: rng.standard_normal(s).astype("<f4")
def st(path, tensors):
    h, off, data = {}, 0, b""
    for k, a in tensors.items():
        b = a.tobytes()
        dt = {"<f4": "F32", "<i8": "I64"}[a.dtype.str]
        h[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); data += b
    hb = json.dumps(h).encode()
    open(os.path.join(d, path), "wb").write(struct.pack("<Q", len(hb)) + hb + data)
st("vit.safetensors", {"vit.embeddings.cls_token": f(1, 1, 16),
   "vit.embeddings.position_embeddings": f(1, 197, 16)})
st("deit.safetensors", {"deit.embeddings.cls_token": f(1, 1, 16),
   "deit.embeddings.distillation_token": f(1, 1, 16),
   "deit.embeddings.position_embeddings": f(1, 198, 16)})
st("clip.safetensors", {"vision_model.embeddings.position_embedding.weight": f(50, 16),
   "vision_model.embeddings.position_ids": np.arange(50, dtype="<i8")[None]})
st("wide.safetensors", {"cls_token": f(1, 1, 16), "pos_embed": f(1, 1 + 12 * 20, 16)})
st("gpt2.safetensors", {"wpe.weight": f(16, 8)})
os.makedirs(os.path.join(d, "gpt2"))
st("gpt2/model-00001-of-00002.safetensors", {"transformer.wte.weight": f(50, 8),
   "transformer.h.0.mlp.c_fc.weight": f(8, 32)})
st("gpt2/model-00002-of-00002.safetensors", {"transformer.h.0.ln_1.weight": f(8),
   "transformer.wpe.weight": f(16, 8)})
wm = {"transformer.wte.weight": "model-00001-of-00002.safetensors",
      "transformer.h.0.mlp.c_fc.weight": "model-00001-of-00002.safetensors",
      "transformer.h.0.ln_1.weight": "model-00002-of-00002.safetensors",
      "transformer.wpe.weight": "model-00002-of-00002.safetensors"}
total = (50 * 8 + 8 * 32 + 8 + 16 * 8) * 4
json.dump({"metadata": {"total_size": total}, "weight_map": wm},
          open(os.path.join(d, "gpt2/model.safetensors.index.json"), "w"), indent=2)
json.dump({"model_type": "gpt2", "n_positions": 16, "n_ctx": 16, "n_embd": 8, "vocab_size": 50},
          open(os.path.join(d, "gpt2/config.json"), "w"), indent=2)
open(os.path.join(d, "gpt2/tokenizer.json"), "w").write('{"model": {"vocab": {}}}')
open(os.path.join(d, "gpt2/generation_config.json"), "w").write('{"max_length": 16}')
os.makedirs(os.path.join(d, "vitdir"))
st("vitdir/model.safetensors", {"vit.embeddings.cls_token": f(1, 1, 16),
   "vit.embeddings.position_embeddings": f(1, 197, 16), "vit.pooler.dense.weight": f(16, 16)})
json.dump({"model_type": "vit", "image_size": 224, "patch_size": 16, "hidden_size": 16},
          open(os.path.join(d, "vitdir/config.json"), "w"), indent=2)
open(os.path.join(d, "vitdir/preprocessor_config.json"), "w").write('{"size": {"height": 224}}')
os.makedirs(os.path.join(d, "bart"))
st("bart/model.safetensors", {"model.encoder.embed_positions.weight": f(18, 8),
   "model.decoder.embed_positions.weight": f(18, 8)})
json.dump({"model_type": "bart", "max_position_embeddings": 16}, open(os.path.join(d, "bart/config.json"), "w"))
PY
tree_sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
torch_check='
import json, struct
import numpy as np, torch, torch.nn.functional as F
def load(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8+n])
    dt = {"F32": "<f4", "I64": "<i8"}
    return {k: np.frombuffer(raw[8+n+v["data_offsets"][0]:8+n+v["data_offsets"][1]], dt[v["dtype"]]).reshape(v["shape"])
            for k, v in h.items() if k != "__metadata__"}
def timm(t, prefix, src, dst, mode):
    t = torch.from_numpy(t.copy()).reshape(1, -1, t.shape[-1])
    g = t[:, prefix:].reshape(1, src[0], src[1], -1).permute(0, 3, 1, 2)
    g = F.interpolate(g, size=dst, mode=mode, align_corners=False).permute(0, 2, 3, 1).reshape(1, dst[0] * dst[1], -1)
    return torch.cat([t[:, :prefix], g], 1)[0].numpy()
def same(a, b, prefix, src, dst, mode):
    w = timm(a, prefix, src, dst, mode); b = b.reshape(w.shape)
    assert (b[:prefix] == a.reshape(-1, a.shape[-1])[:prefix]).all(), "prefix rows kept"
    err = np.abs(b - w).max(); assert err < 1e-5, err
'

# ViT: --grid 24x24 (bicubic by default) equals timm's resample; --to 577 is the same resize.
expect 0 "ViT --grid 24x24" -- resize "$tmp/vit.safetensors" --grid 24x24 -o "$tmp/vit24.safetensors"
cat "$tmp/out"
contains out "1 prefix token (ViT, by the tensor's name), a 14x14 grid" "the layout is said"
contains out "grid 14x14 -> 24x24 by bicubic, 197 -> 577 rows" "the resize is said"
contains out "[1, 577, 16]" "the stored shape is kept (1, N, C)"
check_py "ViT 24x24 bicubic equals torch's interpolate, class row bit for bit" "$torch_check
a = load('vit.safetensors'); b = load('vit24.safetensors')
t = b['vit.embeddings.position_embeddings']; assert t.shape == (1, 577, 16), t.shape
same(a['vit.embeddings.position_embeddings'], t, 1, (14, 14), (24, 24), 'bicubic')
assert a['vit.embeddings.cls_token'].tobytes() == b['vit.embeddings.cls_token'].tobytes()"
expect 0 "ViT --to 577" -- resize "$tmp/vit.safetensors" --to 577 -o "$tmp/vit577.safetensors"
cmp -s "$tmp/vit24.safetensors" "$tmp/vit577.safetensors" || fail "--to 577 differs from --grid 24x24"
expect 2 "ViT --to 578 is no square grid" -- resize "$tmp/vit.safetensors" --to 578 -o "$tmp/x.safetensors"
one_line "--to 578"
contains err "577 rows (24x24) or 626 rows (25x25)" "the error names the nearest square sizes"
[ -e "$tmp/x.safetensors" ] && fail "a refused resize wrote its output"
expect 2 "ViT with a 1-D method" -- resize "$tmp/vit.safetensors" --to 577 --method copy -o "$tmp/x.safetensors"
one_line "1-D method on a vision table"
contains err "bicubic, bilinear or sincos" "the error says which methods resize a grid"

# Down and non-square, bilinear; DeiT's 2 prefix tokens; CLIP's (N, C) storage.
expect 0 "ViT down to 7x10 bilinear" -- resize "$tmp/vit.safetensors" --grid 7x10 --method bilinear -o "$tmp/vit710.safetensors"
check_py "ViT 7x10 bilinear equals torch" "$torch_check
a = load('vit.safetensors')['vit.embeddings.position_embeddings']
b = load('vit710.safetensors')['vit.embeddings.position_embeddings']
assert b.shape == (1, 71, 16); same(a, b, 1, (14, 14), (7, 10), 'bilinear')"
expect 0 "DeiT distilled --grid 16x16" -- resize "$tmp/deit.safetensors" --grid 16x16 -o "$tmp/deit16.safetensors"
contains out "2 prefix tokens (DeiT (distilled), by the tensor's name)" "DeiT's 2 prefix tokens"
check_py "DeiT: 2 prefix rows kept, grid equals torch" "$torch_check
a = load('deit.safetensors')['deit.embeddings.position_embeddings']
b = load('deit16.safetensors')['deit.embeddings.position_embeddings']
assert b.shape == (1, 258, 16); same(a, b, 2, (14, 14), (16, 16), 'bicubic')"
expect 0 "CLIP vision --grid 10x10" -- resize "$tmp/clip.safetensors" --grid 10x10 -o "$tmp/clip10.safetensors"
contains out "extended" "CLIP's position_ids extended"
check_py "CLIP: (N, C) storage kept, position_ids count on" "$torch_check
a = load('clip.safetensors'); b = load('clip10.safetensors')
t = b['vision_model.embeddings.position_embedding.weight']; assert t.shape == (101, 16), t.shape
same(a['vision_model.embeddings.position_embedding.weight'], t, 1, (7, 7), (10, 10), 'bicubic')
assert (b['vision_model.embeddings.position_ids'] == np.arange(101)[None]).all()"

# Non-square sources need --from-grid; prefix mismatches and 1-D tables are refused in one line.
expect 2 "non-square source without --from-grid" -- resize "$tmp/wide.safetensors" --grid 24x40 -o "$tmp/x.safetensors"
one_line "non-square source"
contains err "--from-grid" "the error points to --from-grid"
expect 0 "non-square source with --from-grid 12x20" -- resize "$tmp/wide.safetensors" --from-grid 12x20 --grid 24x40 -o "$tmp/wide2.safetensors"
check_py "timm non-square 12x20 -> 24x40 equals torch" "$torch_check
a = load('wide.safetensors')['pos_embed']; b = load('wide2.safetensors')['pos_embed']
assert b.shape == (1, 961, 16); same(a, b, 1, (12, 20), (24, 40), 'bicubic')"
expect 2 "--prefix-tokens 2 on a ViT" -- resize "$tmp/vit.safetensors" --prefix-tokens 2 --grid 24x24 -o "$tmp/x.safetensors"
one_line "prefix mismatch"
contains err "--prefix-tokens 1" "the error names the prefix that fits"
expect 2 "--grid on GPT-2's 1-D table" -- resize "$tmp/gpt2.safetensors" --grid 4x4 -o "$tmp/x.safetensors"
one_line "--grid on a 1-D table"
contains err "1-D" "the error says the table is 1-D"
expect 2 "bad grid text" -- resize "$tmp/vit.safetensors" --grid 24 -o "$tmp/x.safetensors"
one_line "bad grid text"
[ -e "$tmp/x.safetensors" ] && fail "a refused resize wrote its output"
expect 0 "MAE sin-cos grid" -- resize "$tmp/vit.safetensors" --grid 4x4 --method sincos -o "$tmp/sincos.safetensors"
check_py "sincos: MAE's table after the class row" "$torch_check
a = load('vit.safetensors')['vit.embeddings.position_embeddings'][0]
b = load('sincos.safetensors')['vit.embeddings.position_embeddings'][0]
om = 1.0 / 10000 ** (np.arange(4) / 4.0)
w, h = np.meshgrid(np.arange(4.0), np.arange(4.0))
e = lambda p: np.concatenate([np.sin(np.outer(p.ravel(), om)), np.cos(np.outer(p.ravel(), om))], 1)
want = np.concatenate([e(w), e(h)], 1).astype('<f4')
assert (b[0] == a[0]).all() and np.abs(b[1:] - want).max() < 1.2e-7"

# A sharded GPT-2-shaped folder resized 2x by copy.
before=$(tree_sum "$tmp/gpt2")
expect 0 "GPT-2 folder --to 32 by copy" -- resize "$tmp/gpt2" --to 32 --method copy -o "$tmp/gpt2-long"
cat "$tmp/out"
contains out "'model-00002-of-00002.safetensors' rewritten" "the table's shard is named"
contains out "n_positions 16 -> 32, n_ctx 16 -> 32" "config keys updated"
contains out "total_size 3168 -> 3680" "index total_size updated"
[ "$before" = "$(tree_sum "$tmp/gpt2")" ] || fail "the input folder changed"
check_py "GPT-2 folder: config, index, shards and other files" "$torch_check
import os
a, b = 'gpt2/', 'gpt2-long/'
c = json.load(open(b + 'config.json')); c0 = json.load(open(a + 'config.json'))
assert c['n_positions'] == 32 and c['n_ctx'] == 32, c
assert {k: v for k, v in c.items() if k not in ('n_positions', 'n_ctx')} == {k: v for k, v in c0.items() if k not in ('n_positions', 'n_ctx')}
i = json.load(open(b + 'model.safetensors.index.json')); i0 = json.load(open(a + 'model.safetensors.index.json'))
assert i['weight_map'] == i0['weight_map'] and i['metadata']['total_size'] == i0['metadata']['total_size'] + 16 * 8 * 4
for f in ('model-00001-of-00002.safetensors', 'tokenizer.json', 'generation_config.json'):
    assert open(a + f, 'rb').read() == open(b + f, 'rb').read(), f
assert sorted(os.listdir(a)) == sorted(os.listdir(b))
s0 = load(a + 'model-00002-of-00002.safetensors'); s = load(b + 'model-00002-of-00002.safetensors')
assert (s['transformer.wpe.weight'] == np.tile(s0['transformer.wpe.weight'], (2, 1))).all()
assert s['transformer.h.0.ln_1.weight'].tobytes() == s0['transformer.h.0.ln_1.weight'].tobytes()
total = sum(v.nbytes for f in ('model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors') for v in load(b + f).values())
assert total == i['metadata']['total_size'], (total, i['metadata'])"
expect 0 "inspect the resized GPT-2 folder" -- inspect "$tmp/gpt2-long"
contains out "n_positions = 32 (the table's 32 rows imply 32): agrees" "inspect checks n_positions"
contains out "config vs table: agree" "inspect says they agree"
expect 1 "an existing non-empty OUTDIR" -- resize "$tmp/gpt2" --to 64 --method copy -o "$tmp/gpt2-long"
one_line "non-empty OUTDIR"
contains err "--force" "the error names --force"
expect 0 "--force replaces it" -- resize "$tmp/gpt2" --to 64 --method copy -o "$tmp/gpt2-long" --force
check_py "--force: the folder replaced" "
import json; assert json.load(open('gpt2-long/config.json'))['n_positions'] == 64"
ls -a "$tmp" | grep -q '^\.posemb-' && fail "a temporary folder was left behind"

# A ViT folder resized to a 24x24 grid: image_size 384.
before=$(tree_sum "$tmp/vitdir")
expect 0 "inspect the ViT folder" -- inspect "$tmp/vitdir"
contains out "image_size = 224 (the table's 197 rows imply 224): agrees" "inspect checks image_size"
contains out "grid:            1 prefix token" "inspect shows the grid"
expect 0 "ViT folder --grid 24x24" -- resize "$tmp/vitdir" --grid 24x24 -o "$tmp/vit384"
cat "$tmp/out"
contains out "image_size 224 -> 384" "image_size updated"
[ "$before" = "$(tree_sum "$tmp/vitdir")" ] || fail "the input folder changed"
check_py "ViT folder: image_size 384, the table 577 rows, other files kept" "$torch_check
c = json.load(open('vit384/config.json')); assert c['image_size'] == 384 and c['patch_size'] == 16, c
a = load('vitdir/model.safetensors'); b = load('vit384/model.safetensors')
same(a['vit.embeddings.position_embeddings'], b['vit.embeddings.position_embeddings'], 1, (14, 14), (24, 24), 'bicubic')
assert a['vit.pooler.dense.weight'].tobytes() == b['vit.pooler.dense.weight'].tobytes()
assert open('vitdir/preprocessor_config.json').read() == open('vit384/preprocessor_config.json').read()"
expect 0 "inspect the 384 folder" -- inspect "$tmp/vit384"
contains out "config vs table: agree" "the resized folder agrees"
# A folder whose config says another size: inspect says they disagree.
cp -r "$tmp/vit384" "$tmp/vitbad"
"$py" -c "import json; p='$tmp/vitbad/config.json'; c=json.load(open(p)); c['image_size']=224; json.dump(c, open(p,'w'))"
expect 0 "inspect a folder whose config disagrees" -- inspect "$tmp/vitbad"
contains out "DISAGREES" "the disagreeing key is flagged"
contains out "config vs table: disagree" "inspect says they disagree"
# The right size written as a float: still flagged, and said why.
"$py" -c "p='$tmp/vitbad/config.json'; t=open(p).read().replace('224', '384.0'); open(p, 'w').write(t)"
expect 0 "inspect a folder whose image_size is a float" -- inspect "$tmp/vitbad"
contains out "image_size = 384.0" "the value as written"
contains out "written as a float" "the float named as the reason"

# BART: 2 offset rows; the encoder's table shares the decoder's key, which the CLI warns about.
expect 0 "BART decoder folder" -- resize "$tmp/bart" --tensor model.decoder.embed_positions.weight --reserved-rows 2 --to 32 --method copy -o "$tmp/bart-long"
contains out "max_position_embeddings 16 -> 32" "BART's key counts positions, not the 2 offset rows"
contains err "model.encoder.embed_positions.weight" "the encoder table left at the old length is named"
one_line "BART warning"

finish test_vision_cli
