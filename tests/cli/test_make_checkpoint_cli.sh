#!/usr/bin/env bash
# `posemb make-checkpoint` (issue 48): checkpoints shaped like GPT-2's, BERT's, RoBERTa's,
# ViT's and CLIP's for users without network. Every tensor's name, dtype, shape and the values
# that mean something (zero padding rows, LayerNorm's 1 and 0, position_ids counting, N(0, 0.02))
# are checked with numpy against the models' published shapes; config.json against the keys
# transformers writes; the folders and shards with their index; the refusals; and that posemb's
# own readers take the results as the real files.
# Usage: test_make_checkpoint_cli.sh POSEMB_BINARY PYTHON
set -u
bin="$1"
py="$2"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

check_py() {  # check_py DESCRIPTION SCRIPT: the python script must exit 0
  if ! (cd "$tmp" && "$py" -c "$2"); then fail "$1"; fi
}
# A reader of safetensors for the checks, written from the format's description (not posemb's).
cat >"$tmp/st.py" <<'PY'
import json, struct
import numpy as np
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    dt = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "BF16": "<u2"}
    out = {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                            dtype=dt[v["dtype"]]).reshape(v["shape"]) for k, v in h.items()}
    return out, meta, {k: v["dtype"] for k, v in h.items()}
PY

for m in gpt2 bert roberta vit clip; do
  expect 0 "make $m" -- make-checkpoint "$m" -o "$tmp/$m.safetensors"
  contains out "random values: not a trained model" "$m says it is not trained"
done
contains out "name one with --tensor" "clip says it has two tables"

check_py "names, shapes, dtypes and values of the published models" "
import numpy as np, st
want = {
 'gpt2': {'wte.weight': (50257, 768), 'wpe.weight': (1024, 768), 'ln_f.weight': (768,),
          'ln_f.bias': (768,)},
 'bert': {'bert.embeddings.word_embeddings.weight': (30522, 768),
          'bert.embeddings.position_embeddings.weight': (512, 768),
          'bert.embeddings.token_type_embeddings.weight': (2, 768),
          'bert.embeddings.LayerNorm.weight': (768,), 'bert.embeddings.LayerNorm.bias': (768,),
          'bert.embeddings.position_ids': (1, 512)},
 'roberta': {'roberta.embeddings.word_embeddings.weight': (50265, 768),
             'roberta.embeddings.position_embeddings.weight': (514, 768),
             'roberta.embeddings.token_type_embeddings.weight': (1, 768),
             'roberta.embeddings.LayerNorm.weight': (768,),
             'roberta.embeddings.LayerNorm.bias': (768,),
             'roberta.embeddings.position_ids': (1, 514)},
 'vit': {'vit.embeddings.cls_token': (1, 1, 768), 'vit.embeddings.position_embeddings': (1, 197, 768),
         'vit.embeddings.patch_embeddings.projection.weight': (768, 3, 16, 16),
         'vit.embeddings.patch_embeddings.projection.bias': (768,)},
 'clip': {'text_model.embeddings.token_embedding.weight': (49408, 512),
          'text_model.embeddings.position_embedding.weight': (77, 512),
          'text_model.embeddings.position_ids': (1, 77),
          'vision_model.embeddings.class_embedding': (768,),
          'vision_model.embeddings.patch_embedding.weight': (768, 3, 32, 32),
          'vision_model.embeddings.position_embedding.weight': (50, 768),
          'vision_model.embeddings.position_ids': (1, 50)},
}
for m, shapes in want.items():
    t, meta, dtypes = st.read(m + '.safetensors')
    assert list(t) == list(shapes), (m, list(t))
    assert meta['format'] == 'pt' and 'not a trained model' in meta['posemb.provenance'], meta
    for name, shape in shapes.items():
        a = t[name]
        assert a.shape == shape, (name, a.shape)
        if name.endswith('position_ids'):
            assert dtypes[name] == 'I64' and (a[0] == np.arange(shape[1])).all(), name
        elif 'LayerNorm.weight' in name or name == 'ln_f.weight':
            assert (a == 1).all(), name
        elif name.endswith('bias'):
            assert (a == 0).all(), name
        else:
            assert dtypes[name] == 'F32'
            live = a.reshape(-1, a.shape[-1])
            live = live[(live != 0).any(axis=1)]
            assert abs(live.std() - 0.02) < 0.002 and abs(live.mean()) < 0.002, (name, live.std())
r = st.read('roberta.safetensors')[0]
assert (r['roberta.embeddings.position_embeddings.weight'][1] == 0).all()   # padding_idx 1
assert (r['roberta.embeddings.position_embeddings.weight'][[0, 2]] != 0).any(axis=1).all()
assert (r['roberta.embeddings.word_embeddings.weight'][1] == 0).all()
b = st.read('bert.safetensors')[0]
assert (b['bert.embeddings.word_embeddings.weight'][0] == 0).all()          # pad_token_id 0
g = st.read('gpt2.safetensors')[0]
assert not np.array_equal(g['wte.weight'][:1024], g['wpe.weight'])          # streams differ
"

# The same seed gives the same bytes; another seed other values; --dim narrows every table.
expect 0 "again" -- make-checkpoint vit -o "$tmp/vit2.safetensors"
cmp -s "$tmp/vit.safetensors" "$tmp/vit2.safetensors" || fail "the same seed wrote other bytes"
expect 0 "seed 7" -- make-checkpoint vit --seed 7 -o "$tmp/vit7.safetensors"
cmp -s "$tmp/vit.safetensors" "$tmp/vit7.safetensors" && fail "seed 7 wrote seed 0's bytes"
expect 0 "dim 64, f16" -- make-checkpoint clip --dim 64 --dtype f16 -o "$tmp/clip64.safetensors"
check_py "--dim and --dtype" "
import st
t, meta, dt = st.read('clip64.safetensors')
assert t['text_model.embeddings.position_embedding.weight'].shape == (77, 64)
assert t['vision_model.embeddings.patch_embedding.weight'].shape == (64, 3, 32, 32)
assert dt['text_model.embeddings.token_embedding.weight'] == 'F16'
assert dt['text_model.embeddings.position_ids'] == 'I64'
assert 'dim 64' in meta['posemb.provenance']"

# posemb's readers take them as they take the real files.
expect 0 "inspect roberta" -- inspect "$tmp/roberta.safetensors"
contains err "its first 2 rows look reserved" "RoBERTa's padding row is seen"
expect 0 "inspect vit" -- inspect "$tmp/vit.safetensors"
contains out "a 14x14 grid" "ViT's grid"
contains out "reserved rows:   1 " "the class token"
expect 1 "inspect clip (two tables)" -- inspect "$tmp/clip.safetensors"
expect 0 "inspect clip text" -- inspect "$tmp/clip.safetensors" --tensor text_model.embeddings.position_embedding.weight
contains out "77 x 512" "CLIP's text table"

# The table alone, as .npy.
expect 0 "npy" -- make-checkpoint gpt2 --dim 8 -o "$tmp/wpe.npy"
check_py "the .npy is the table" "
import numpy as np, st
a = np.load('wpe.npy')
assert a.shape == (1024, 8) and a.dtype == np.float32"
expect 2 "clip to .npy" -- make-checkpoint clip -o "$tmp/clip.npy"
one_line "clip to .npy"
contains err "clip has two position tables" "names why"
[ -e "$tmp/clip.npy" ] && fail "clip.npy written"

# Folders: config.json as transformers writes it, the shards and their index, checked by posemb.
expect 0 "folder" -- make-checkpoint roberta --folder --dim 32 -o "$tmp/rob"
contains out "wrote folder" "says it wrote a folder"
expect 0 "sharded folder" -- make-checkpoint gpt2 --folder --shards 2 --dim 64 -o "$tmp/g2"
check_py "config.json and the index" "
import json, os, st
c = json.load(open('rob/config.json'))
assert c['model_type'] == 'roberta' and c['max_position_embeddings'] == 514 and c['pad_token_id'] == 1
assert c['hidden_size'] == 32 and c['type_vocab_size'] == 1, c
assert list(c) == sorted(c)
assert sorted(os.listdir('rob')) == ['config.json', 'model.safetensors']
c = json.load(open('g2/config.json'))
assert (c['n_positions'], c['n_ctx'], c['n_embd'], c['vocab_size']) == (1024, 1024, 64, 50257), c
i = json.load(open('g2/model.safetensors.index.json'))
a = 'model-00001-of-00002.safetensors'; b = 'model-00002-of-00002.safetensors'
assert i['weight_map'] == {'wte.weight': a, 'wpe.weight': b, 'ln_f.weight': b, 'ln_f.bias': b}, i
size = sum(x.nbytes for f in (a, b) for x in st.read('g2/' + f)[0].values())
assert i['metadata']['total_size'] == size, (i, size)"
expect 0 "inspect the sharded folder" -- inspect "$tmp/g2"
contains out "config vs table: agree" "posemb reads the config it wrote"
contains out "2 shard(s)" "both shards"
expect 0 "inspect the roberta folder" -- inspect "$tmp/rob" --reserved-rows 2
contains out "max_position_embeddings = 514" "RoBERTa's config key"
contains out "config vs table: agree" "RoBERTa folder agrees"

# Refusals: nothing written, one line.
expect 2 "shards without a folder" -- make-checkpoint gpt2 --shards 2 -o "$tmp/x.safetensors"
one_line "shards without a folder"
expect 2 "more shards than tensors" -- make-checkpoint gpt2 --folder --shards 5 -o "$tmp/x"
contains err "--shards 5: gpt2 has 4 tensors" "names the count"
[ -e "$tmp/x.safetensors" ] || [ -e "$tmp/x" ] && fail "something written"
expect 1 "an existing folder" -- make-checkpoint gpt2 --folder --dim 8 -o "$tmp/g2"
one_line "an existing folder"
contains err "exists and is not empty; pass --force" "says how"
check_py "the existing folder kept" "
import json; assert json.load(open('g2/config.json'))['n_embd'] == 64"
expect 0 "--force" -- make-checkpoint gpt2 --folder --dim 8 --force -o "$tmp/g2"
check_py "--force replaced it" "
import json, os
assert json.load(open('g2/config.json'))['n_embd'] == 8
assert sorted(os.listdir('g2')) == ['config.json', 'model.safetensors']"
expect 2 "unknown model" -- make-checkpoint llama -o "$tmp/l.safetensors"
one_line "unknown model"
expect 2 "dim 0" -- make-checkpoint gpt2 --dim 0 -o "$tmp/l.safetensors"
[ -z "$(ls -A "$tmp" | grep '^\.posemb-')" ] || fail "temporary files left"

finish test_make_checkpoint_cli
