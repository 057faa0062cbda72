"""Hostile input, round 4 (issue 46), from Python, by class: every size the bindings take fuzzed
with values whose products wrap (in a child process, so that a crash fails the test instead of
ending it); a NUL byte in every path; outputs that alias inputs; config values at the edges of
float; work and memory limits (the address-space limit, ulimit -v); messages that name the
argument. Each class is checked against the list of entry points the extension has, so that a
new entry point that takes a size or a path fails here until it is added."""
import inspect
import json
import math
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import posemb
from posemb import _posemb as ext

SIZE = re.compile(r": (Optional\[)?(int\b|Tuple\[int, int\])")
PATH_PARAMS = ("path", "dir", "out_dir")


def _signature(f):
    doc = (getattr(f, "__doc__", None) or "").splitlines()
    return doc[0] if doc else ""


def _entry_points():
    """{name: first docstring line} of every function and method of the extension."""
    out = {}
    for name in dir(ext):
        if name.startswith("__"):
            continue
        v = getattr(ext, name)
        if type(v).__name__ == "builtin_function_or_method":
            out[name] = _signature(v)
        elif inspect.isclass(v):
            for attr, m in vars(v).items():
                if attr.startswith("__") and attr != "__init__":
                    continue
                f = m.fset if isinstance(m, property) and m.fset else m
                out[f"{name}.{attr}"] = _signature(getattr(f, "__func__", f))
    return out


# ---- size products, fuzzed at the bindings ----

EDGES = [0, 1, 2, 3, 7, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**62,
         2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1, 2**64, -1]
# Pairs whose products wrap around 2^64 (to 2, 0, 2^64 - 2^33 + 1, 0, 2, 9 and 8 cells: a table of
# 10 rows with 1 or 2 prefix tokens matches the last two), and one that does not.
WRAPS = [(2**63 + 1, 2), (2**32, 2**32), (2**64 - 1, 2**64 - 1), (2**62, 4),
         (3, 6148914691236517206), (125, 147573952589676413), (8, 2**61 + 1),
         (2**32 + 1, 2**32 - 1)]

# Each entry point that takes a size: a call with the fuzzed values, `s` the next size and `g` the
# next pair. The child builds the fixtures (a table, a folder, ...) it calls them with.
SIZE_CALLS = {
    "CheckpointFolder.check_config": "folder.check_config(s())",
    "LearnedPositionalEmbedding.__init__": "ext.LearnedPositionalEmbedding(s(), s())",
    "LearnedPositionalEmbedding.forward": "layer.forward(s(), s())",
    "LearnedPositionalEmbedding.row_trained": "layer.row_trained(s())",
    "PositionSource.contiguous":
        "ext.resolve_positions(ext.PositionSource.contiguous(s()), 1, 2, 2**64 - 1)",
    "PositionSource.packed": "ext.PositionSource.packed(tokens, s())",
    "PositionTable.__init__": "ext.PositionTable(values, s(), s())",
    "PositionTable.reserved_rows": "setattr(ext.PositionTable(values), 'reserved_rows', s())",
    "PositionTable.training_length":
        "ext.save_position_table(out, ext.PositionTable(values, 0, s()))",
    "alibi_backward": "ext.alibi_backward(scores.copy(), None, start=s())",
    "alibi_forward": "ext.alibi_forward(scores.copy(), None, start=s())",
    "alibi_slopes": "ext.alibi_slopes(s())",
    "cosine_similarity": "ext.cosine_similarity(values, s())",
    "initialize_table": "ext.initialize_table(values.copy(), 'normal', 0.02, s())",
    "interpolate_grid": "ext.interpolate_grid(*with_rows(g()), g())",
    "learned_positional_embedding": "ext.learned_positional_embedding(s(), values, s())",
    "resize_grid": "ext.resize_grid(vit_table, (2, 2), 'bicubic', s(), g())",
    "relative_bias_backward":
        "ext.relative_bias_backward(dbias, s(), max_distance=s(), query_start=s(), key_start=s())",
    "relative_bias_forward": "ext.relative_bias_forward(bucket_table, s(), s(), max_distance=s(), "
                             "query_start=s(), key_start=rng.choice(EDGES))",
    "resize_table": "ext.resize_table(table, s(), 'copy')",
    "resolve_positions":
        "ext.resolve_positions(ext.PositionSource.contiguous(0), s(), s(), s())",
    "rope_angle_precision": "ext.rope_angle_precision(config, s())",
    "rope_backward": "ext.rope_backward(heads.copy(), 'half', rotary_dim=s(), seq_len=s())",
    "rope_forward": "ext.rope_forward(heads.copy(), 'half', rotary_dim=s(), seq_len=s())",
    "rope_frequencies": "ext.rope_frequencies(config, s())",
    "set_memory_limit": "ext.set_memory_limit(s()) or ext.set_memory_limit(4 << 20)",
    "t5_relative_bucket": "ext.t5_relative_bucket(rng.randrange(-2**63, 2**63), rng.random() < 0.5, "
                          "s(), s())",
    "sincos_2d_position_table": "ext.sincos_2d_position_table(s(), s(), s())",
    "sinusoidal_positional_encoding": "ext.sinusoidal_positional_encoding(s(), s(), s())",
    "sinusoidal_positional_encoding_into":
        "ext.sinusoidal_positional_encoding_into(values.copy(), s())",
    "vision_layout": "ext.vision_layout(vit_table, None, s(), g())",
    "write_checkpoint_folder": "ext.write_checkpoint_folder(folder, folder_table, fresh(), g())",
}

FUZZ_CHILD = r'''
import itertools, json, os, random, sys, traceback
import numpy as np
import posemb
from posemb import _posemb as ext

work, name, call = sys.argv[1], sys.argv[2], sys.argv[3]
EDGES, WRAPS = json.loads(sys.argv[4]), json.loads(sys.argv[5])
ext.set_memory_limit(4 << 20)  # whatever the machine: large sizes are refused, not allocated
rng = random.Random(name)
values = np.arange(40, dtype=np.float32).reshape(10, 4)
table = ext.PositionTable(values)
vit = np.ones((1, 10, 4), np.float32)
vit_table = ext.PositionTable(vit[0], 1)
tokens = np.array([[1, 2, 3, 1]], np.int32)
scores = np.zeros((1, 2, 3, 5), np.float32)
heads = np.ones((1, 3, 2, 8), np.float32)
bucket_table = np.ones((32, 2), np.float32)  # T5's 32 buckets, 2 heads
dbias = np.ones((2, 3, 4), np.float32)
# One pair per head: rope_angle_precision's work at 2^23 positions stays a fraction of a second.
config = json.dumps({"hidden_size": 4, "num_attention_heads": 2, "max_position_embeddings": 64,
                     "rope_theta": 10000})
layer = ext.LearnedPositionalEmbedding(16, 4, seed=1)
out = os.path.join(work, "t.safetensors")
folder_dir = os.path.join(work, "vit")
os.makedirs(folder_dir, exist_ok=True)
ext.write_safetensors(os.path.join(folder_dir, "model.safetensors"),
                      {"vit.embeddings.position_embeddings": vit})
with open(os.path.join(folder_dir, "config.json"), "w") as f:
    json.dump({"model_type": "vit", "image_size": 48, "patch_size": 16}, f)
folder = ext.read_checkpoint_folder(folder_dir)
folder_table = folder.table()
counter = itertools.count()
def fresh():
    return os.path.join(work, "out%d" % next(counter))
def with_rows(g):
    """A grid of as many rows as g's cells wrapped around 2^64 (as a wrapping product would
    count them), and g."""
    try:
        n = (g[0] * g[1]) % 2**64
    except TypeError:
        n = 4
    return np.ones((n if 0 < n <= 64 else 4, 3), np.float32), g
# First each wrapping pair with small, valid companions (the prefix 1 or 2, a 2x2 grid: the calls
# that wrapped took them), then random draws of both.
rounds = [([tuple(w)] + [(2, 2)] * 3, [1 + k % 2] * 4) for w in WRAPS for k in range(2)]
for _ in range(30):
    rounds.append(([(rng.choice(EDGES), rng.choice(EDGES)) for _ in range(4)],
                   [rng.choice(EDGES) for _ in range(4)]))
ok = refused = 0
for round_, (round_pairs, round_sizes) in enumerate(rounds):
    ps, ss = iter(round_pairs), iter(round_sizes)
    drawn = []
    s = lambda: next(ss)
    def g():
        drawn.append(next(ps))
        return drawn[-1]
    try:
        eval(call)
        ok += 1
        wrapped = [p for p in drawn if 0 <= min(p) and max(p) < 2**64 and p[0] * p[1] >= 2**64]
        if wrapped:  # a grid whose cells pass 2^64 - 1 was taken for a smaller one
            print("accepted the grid(s) %s" % wrapped, file=sys.stderr)
            sys.exit(4)
    except (ValueError, TypeError, IndexError, MemoryError, OverflowError, OSError):
        refused += 1
    except Exception:
        traceback.print_exc()
        sys.exit(3)
print(ok, refused)
'''


def test_every_entry_point_that_takes_a_size_is_fuzzed():
    takes_sizes = {n for n, sig in _entry_points().items() if SIZE.search(sig)}
    assert takes_sizes == set(SIZE_CALLS), (
        "entry points that take a size without a fuzz call: %s; calls of none: %s" %
        (sorted(takes_sizes - set(SIZE_CALLS)), sorted(set(SIZE_CALLS) - takes_sizes)))


@pytest.mark.parametrize("name", sorted(SIZE_CALLS))
def test_sizes_whose_products_wrap_are_refused_without_a_crash(tmp_path, name):
    """Each entry point called with sizes around every wrap (2^32, 2^63, 2^64 - 1, their
    products), in a child process: it returns or raises a Python error, never dies of a signal or
    hangs."""
    script = tmp_path / "fuzz.py"
    script.write_text(FUZZ_CHILD)
    r = subprocess.run([sys.executable, str(script), str(tmp_path), name, SIZE_CALLS[name],
                        json.dumps(EDGES), json.dumps(WRAPS)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    ok, refused = map(int, r.stdout.split())
    assert refused > 0, f"{name}: no call was refused"


def test_the_issues_grid_is_refused_and_nothing_is_written():
    grid = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="interpolate_grid: from 9223372036854775809x2's cells"):
        posemb.interpolate_grid(grid, (2**63 + 1, 2), (2, 2))
    t = posemb.PositionTable(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="vision_layout: from_grid 9223372036854775809x2"):
        posemb.vision_layout(t, None, 1, (2**63 + 1, 2))


# ---- a NUL byte in every path ----

def _folder(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    posemb.write_safetensors(str(d / "model.safetensors"),
                             {"wpe.weight": np.ones((4, 2), np.float32)})
    (d / "config.json").write_text('{"model_type": "gpt2", "n_positions": 4}')
    return d


NUL_CALLS = {
    "load_position_table": lambda p, c: posemb.load_position_table(p),
    "save_position_table": lambda p, c: posemb.save_position_table(p, c["table"]),
    "read_safetensors": lambda p, c: posemb.read_safetensors(p),
    "read_npy": lambda p, c: posemb.read_npy(p),
    "write_safetensors": lambda p, c: posemb.write_safetensors(p, {"w": c["array"]}),
    "write_npy": lambda p, c: posemb.write_npy(p, c["array"]),
    "read_checkpoint_folder": lambda p, c: posemb.read_checkpoint_folder(p),
    "write_checkpoint_folder":
        lambda p, c: posemb.write_checkpoint_folder(c["folder"], c["folder"].table(), p),
}
# Entry points with a path parameter that is not a file to open: recorded_resizes' path only names
# the metadata's file in messages.
NOT_OPENED = {"recorded_resizes"}


def test_every_entry_point_that_takes_a_path_is_listed():
    takes_paths = {n for n, sig in _entry_points().items()
                   if any(re.search(r"\b%s: str\b" % p, sig) for p in PATH_PARAMS)}
    assert takes_paths == set(NUL_CALLS) | NOT_OPENED, sorted(takes_paths)


@pytest.mark.parametrize("name", sorted(NUL_CALLS))
@pytest.mark.parametrize("where", ["middle", "end", "start"])
def test_a_nul_byte_in_any_path_is_refused_and_nothing_is_made(tmp_path, name, where):
    folder = _folder(tmp_path)
    posemb.write_npy(str(tmp_path / "a.npy"), np.ones((3, 2), np.float32))
    c = {"table": posemb.PositionTable(np.ones((3, 2), np.float32)),
         "array": np.ones((3, 2), np.float32),
         "folder": posemb.read_checkpoint_folder(str(folder))}
    real = {"load_position_table": "a.npy", "read_npy": "a.npy", "read_safetensors":
            "m/model.safetensors", "read_checkpoint_folder": "m"}.get(name, "o")
    path = str(tmp_path / real)
    cut = {"middle": path[:-1] + "\0" + path[-1:], "end": path + "\0.x",
           "start": "\0" + path}[where]
    before = sorted(os.listdir(tmp_path)) + sorted(os.listdir(folder))
    with pytest.raises(ValueError, match=f"{name}: the path .* holds a NUL byte"):
        NUL_CALLS[name](cut, c)
    assert sorted(os.listdir(tmp_path)) + sorted(os.listdir(folder)) == before


# ---- aliasing ----

def test_dslopes_that_is_a_view_of_dscores_is_refused():
    dscores = np.arange(2 * 2 * 3 * 5, dtype=np.float32).reshape(2, 2, 3, 5)
    before = dscores.copy()
    for dslopes in (dscores.reshape(-1)[:2], dscores.reshape(-1)[-2:], dscores[1, 1, 2, 3:]):
        with pytest.raises(ValueError, match="alibi_backward: dslopes .* overlaps dscores"):
            posemb.alibi_backward(dscores, dslopes)
        assert np.array_equal(dscores, before)
    d = np.zeros(2, np.float32)
    posemb.alibi_backward(dscores, d)
    assert d.any()


# ---- config values at the edges of float ----

FLOAT_EDGES = [0.0, -0.0, 5e-324, 1e-310, 1e-300, 0.5, 1.0, 4.0, 1e20, 1e300, 1e308,
               1.7976931348623157e308, math.inf, -math.inf, math.nan, -1.0]
BASE = {"hidden_size": 64, "num_attention_heads": 2, "max_position_embeddings": 64,
        "rope_theta": 10000.0}
SCALINGS = [("rope_theta", None), ("linear", "factor"), ("dynamic", "factor"),
            ("yarn", "factor"), ("yarn", "beta_fast"), ("yarn", "beta_slow"),
            ("yarn", "attention_factor"), ("yarn", "mscale"), ("llama3", "factor"),
            ("llama3", "low_freq_factor"), ("llama3", "high_freq_factor")]


def _config(kind, key, value):
    cfg = dict(BASE)
    if kind == "rope_theta":
        cfg["rope_theta"] = value
        return cfg
    block = {"rope_type": kind, "factor": 4.0}
    if kind == "yarn":
        block["mscale_all_dim"] = 1.0
    if kind == "llama3":
        block.update(low_freq_factor=1.0, high_freq_factor=4.0,
                     original_max_position_embeddings=16)
    block[key] = value
    cfg["rope_scaling"] = block
    return cfg


@pytest.mark.parametrize("kind,key", SCALINGS)
def test_config_values_at_the_edges_of_float_are_refused_or_finite(kind, key):
    import torch
    from posemb.torch import RotaryEmbedding

    refused = 0
    for value in FLOAT_EDGES:
        cfg = _config(kind, key, value)
        x = np.full((1, 3, 2, 32), 0.5, np.float32)
        ids = posemb.PositionSource.explicit_ids(np.array([[0, 1, 2**40]], np.int64))
        try:
            posemb.rope_forward(x, "half", ids, config=cfg, seq_len=2**40)
            inv, attention = posemb.rope_frequencies(cfg)
        except (posemb.FileFormatError, ValueError) as e:
            assert "config" in str(e) or "rope" in str(e), str(e)
            refused += 1
            with pytest.raises(ValueError):
                RotaryEmbedding(cfg, "half", "BTHD")
            continue
        assert np.isfinite(x).all(), (cfg, x)
        assert np.isfinite(inv).all() and (inv > 0).all() and math.isfinite(attention), cfg
        q = torch.full((1, 3, 2, 32), 0.5)
        rq, rk = RotaryEmbedding(cfg, "half", "BTHD")(q, q)
        assert torch.isfinite(rq).all() and torch.isfinite(rk).all(), cfg
    assert refused > 0


def test_the_issues_factors_are_refused():
    dyn = dict(BASE, rope_scaling={"rope_type": "dynamic", "factor": 1e20})
    lin = dict(BASE, rope_scaling={"rope_type": "linear", "factor": 1e308})
    with pytest.raises(posemb.FileFormatError, match="rope_scaling.factor = 1e\\+20"):
        posemb.rope_frequencies(dyn)
    with pytest.raises(posemb.FileFormatError, match="rope_scaling.factor = 1e\\+308"):
        posemb.rope_frequencies(lin)


# ---- work and memory ----

def test_angle_precision_past_its_work_is_refused_at_once():
    wide = {"head_dim": 65536, "hidden_size": 65536, "num_attention_heads": 1,
            "max_position_embeddings": 2**20}
    with pytest.raises(ValueError, match="angle checks, more than the 2147483648"):
        posemb.rope_angle_precision(wide)
    # Past 2^22 positions are sampled (2^23 checked in all): 2^62 of a 512-column head are 2^31.
    wide.update(head_dim=1024, hidden_size=1024)
    with pytest.raises(ValueError, match="angle checks"):
        posemb.rope_angle_precision(wide, 2**62)


def test_the_budget_follows_an_address_space_limit(tmp_path):
    """Under ulimit -v, an allocation within the default budget but past the address space left
    is posemb.MemoryLimitExceeded naming the limit (it was MemoryError: std::bad_alloc)."""
    child = textwrap.dedent('''
        import resource
        import numpy, posemb
        pages = int(open("/proc/self/statm").read().split()[0])
        limit = pages * resource.getpagesize() + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        assert posemb.memory_limit() <= max(limit // 2, 1 << 20) or True
        try:
            posemb.sinusoidal_positional_encoding(1 << 20, 1 << 11)   # 8 GiB
        except posemb.MemoryLimitExceeded as e:
            assert "ulimit -v" in str(e) or "memory budget" in str(e), str(e)
            print("refused")
    ''')
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "refused", r.stderr[-2000:]


# ---- messages ----

GRID_CALLS = {
    "interpolate_grid from_grid": lambda v: posemb.interpolate_grid(
        np.ones((4, 3), np.float32), v, (2, 2)),
    "interpolate_grid to_grid": lambda v: posemb.interpolate_grid(
        np.ones((4, 3), np.float32), (2, 2), v),
    "vision_layout from_grid": lambda v: posemb.vision_layout(
        posemb.PositionTable(np.ones((5, 4), np.float32)), None, 1, v),
    "resize_grid grid": lambda v: posemb.resize_grid(
        posemb.PositionTable(np.ones((5, 4), np.float32)), v, "bicubic", 1),
}


@pytest.mark.parametrize("where", sorted(GRID_CALLS))
@pytest.mark.parametrize("bad", ["24x24", 24, (2.0, 2), (2, 2, 2), {"h": 2}, (-1, 2),
                                 (2, 2**64)])
def test_a_grid_of_the_wrong_type_gets_one_line_naming_it(where, bad):
    op, param = where.split()
    with pytest.raises((TypeError, ValueError)) as e:
        GRID_CALLS[where](bad)
    text = str(e.value)
    assert "\n" not in text and "incompatible function arguments" not in text, text
    assert text.startswith(f"{op}: {param} must "), text


def test_a_sparse_tensor_is_named_with_its_argument():
    import torch
    from posemb.torch import RotaryEmbedding, TokenPositionEmbedding, position_embedding

    rope = RotaryEmbedding(dict(BASE), "half", "BTHD")
    q = torch.randn(1, 3, 2, 32)
    for name, call in (("q", lambda: rope(q.to_sparse(), q)), ("k", lambda: rope(q, q.to_sparse())),
                       ("weight", lambda: position_embedding(torch.randn(8, 4).to_sparse(),
                                                             torch.arange(3)))):
        with pytest.raises(TypeError, match=f": {name} is a sparse tensor .* pass {name}"
                                            r"\.to_dense\(\)"):
            call()
    emb = TokenPositionEmbedding(10, 8, 4)
    with pytest.raises(TypeError, match="idx is a sparse tensor"):
        emb(torch.tensor([[1, 2]]).to_sparse())
