"""Hostile input, round 3 (issue 26), from Python: ids changed while a kernel runs or after a
forward, outputs that alias inputs, NUL bytes in paths, numbers that would overflow or wrap,
dtypes in the wrong byte order, names that are not strings. Each class is tested over every
entry point that has it."""
import os
import re
import threading
import time

import numpy as np
import pytest

import posemb
from posemb import _posemb as ext

B, T, C, V, MAXT = 4, 256, 32, 50, 300
GOOD = (7, 11)  # the two valid values the mutating thread alternates with bad ones
BAD = (10**9, -1, V, -(2**31))


def tables(seed=3):
    rng = np.random.default_rng(seed)
    wte = rng.normal(size=(V, C)).astype(np.float32)
    wpe = rng.normal(size=(MAXT, C)).astype(np.float32)
    return wte, wpe


def reference_forward(tokens, wte, wpe):
    return wte[tokens] + wpe[np.arange(tokens.shape[1])][None, :, :]


def reference_dwte(tokens, dout):
    g = np.zeros((V, C), np.float32)
    for b in range(tokens.shape[0]):
        for t in range(tokens.shape[1]):
            g[tokens[b, t]] += dout[b, t]
    return g


class Flipper:
    """A thread writing GOOD and BAD values into one element of `a` as fast as it can (each
    write takes the GIL, which the kernels release)."""

    def __init__(self, a, index, values):
        self.a, self.index, self.values = a, index, values
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        i = 0
        while not self.stop.is_set():
            self.a[self.index] = self.values[i % len(self.values)]
            i += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def run_for(seconds, call):
    """Calls call() until `seconds` have passed; returns (results, errors) counts."""
    ok = refused = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            call()
            ok += 1
        except (IndexError, ValueError):
            refused += 1
    return ok, refused


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_token_ids_changed_while_the_forward_runs(dtype):
    """Another thread flips tokens[0, 0] among valid and invalid ids while embed_forward runs:
    no crash; every call raises or computes from one of the valid values (one snapshot)."""
    wte, wpe = tables()
    tokens = np.random.default_rng(1).integers(0, V, size=(B, T)).astype(dtype)
    expected = {}
    for g in GOOD:
        tokens[0, 0] = g
        expected[g] = reference_forward(tokens.astype(np.int64), wte, wpe)
    out = np.empty((B, T, C), np.float32)
    seen = []

    def call():
        posemb.embed_forward(tokens, wte, wpe, out=out)
        seen.append(any(np.array_equal(out, e) for e in expected.values()))

    with Flipper(tokens, (0, 0), GOOD + BAD):
        ok, refused = run_for(1.0, call)
    assert ok + refused > 0
    assert all(seen), "an output matched no consistent snapshot of the ids"


def test_token_ids_changed_while_the_backward_and_zero_rows_run():
    wte, wpe = tables()
    tokens = np.random.default_rng(2).integers(0, V, size=(B, T)).astype(np.int32)
    dout = np.random.default_rng(3).normal(size=(B, T, C)).astype(np.float32)
    expected = {}
    for g in GOOD:
        tokens[0, 0] = g
        expected[g] = reference_dwte(tokens, dout)
    seen = []
    guard = np.zeros(4 * C, np.float32)  # memory around dwte that nothing may write

    def backward():
        arena = np.concatenate([guard, np.zeros(V * C, np.float32), guard])
        dwte = arena[4 * C:-4 * C].reshape(V, C)
        try:
            posemb.embed_backward(dwte, None, dout, tokens)
            seen.append(any(np.allclose(dwte, e, rtol=1e-6, atol=1e-5) for e in expected.values()))
        finally:
            assert not arena[:4 * C].any() and not arena[-4 * C:].any(), "wrote outside dwte"

    def zero_rows():
        arena = np.ones(V * C + 8 * C, np.float32)
        g = arena[4 * C:-4 * C].reshape(V, C)
        try:
            ext._zero_rows(g, tokens)
        finally:
            assert (arena[:4 * C] == 1).all() and (arena[-4 * C:] == 1).all(), "wrote outside g"

    with Flipper(tokens, (0, 0), GOOD + BAD):
        run_for(0.5, backward)
        run_for(0.5, zero_rows)
    assert all(seen)


@pytest.mark.parametrize("kind", ["ids32", "ids64", "mask"])
def test_positions_changed_while_the_kernels_run(kind):
    wte, wpe = tables()
    tokens = np.random.default_rng(4).integers(0, V, size=(B, T)).astype(np.int32)
    if kind == "mask":
        arr = np.ones((B, T), np.int32)
        values = (1, 0, 7, -1)
        src = posemb.PositionSource.padding_mask(arr)
    else:
        arr = np.tile(np.arange(T), (B, 1)).astype(np.int32 if kind == "ids32" else np.int64)
        values = (3, 5, 10**9, -1, MAXT)
        src = posemb.PositionSource.explicit_ids(arr)
    dout = np.ones((B, T, C), np.float32)
    with Flipper(arr, (0, 0), values):
        run_for(0.4, lambda: posemb.embed_forward(tokens, wte, wpe, src))
        run_for(0.3, lambda: posemb.add_positions_backward(np.zeros_like(wpe), dout, src))
        run_for(0.3, lambda: posemb.resolve_positions(src, B, T, MAXT))


def test_zero_rows_checks_every_id_before_writing():
    g = np.ones((V, C), np.float32)
    before = g.copy()
    for bad in BAD:
        tokens = np.zeros((2, 3), np.int32)
        tokens[1, 2] = bad
        with pytest.raises(IndexError, match=f"_zero_rows: token id {bad} at batch row 1, token 2"):
            ext._zero_rows(g, tokens)
        assert np.array_equal(g, before)
    ext._zero_rows(g, np.array([[1, 3]], np.int32))
    assert not g[[1, 3]].any() and np.array_equal(g[[0, 2]], before[[0, 2]])


def test_torch_backward_reads_the_forwards_ids():
    """idx.numpy() writes after the forward (unseen by torch's version counter) change neither
    the gradient nor where it is written."""
    import torch
    from posemb.torch import TokenPositionEmbedding

    emb = TokenPositionEmbedding(V, MAXT, C, seed=1)
    idx = torch.randint(0, V, (2, 5))
    pos = torch.tensor([[0, 1, 2, 3, 4]])
    mask = torch.ones(2, 5, dtype=torch.int64)
    for kwargs, tensor in (({}, idx), ({"position_ids": pos}, pos), ({"attention_mask": mask},
                                                                      mask)):
        emb.zero_grad()
        ref = emb(idx.clone(), **{k: v.clone() for k, v in kwargs.items()})
        ref.sum().backward()
        want = (emb.wte.weight.grad.clone(), emb.wpe.weight.grad.clone())
        for bad in (10**9, -1, V):
            emb.zero_grad()
            original = tensor.clone()
            out = emb(idx, **kwargs)
            tensor.numpy()[0, 0] = bad  # after the forward
            out.sum().backward()
            tensor.copy_(original)
            assert torch.equal(emb.wte.weight.grad, want[0])
            assert torch.equal(emb.wpe.weight.grad, want[1])


def test_outputs_that_alias_inputs_are_refused():
    wte, wpe = tables()
    tokens = np.random.default_rng(5).integers(0, V, size=(1, 8)).astype(np.int32)
    arena = np.concatenate([wte, wpe])
    w, p = arena[:V], arena[V:]
    before = arena.copy()
    for first in (0, V - 4, V + 3):
        out = arena[first:first + 8].reshape(1, 8, C)
        with pytest.raises(ValueError, match="embed_forward: out .* overlaps"):
            posemb.embed_forward(tokens, w, p, out=out)
    with pytest.raises(ValueError, match="add_positions_forward: x .* overlaps wpe"):
        posemb.add_positions_forward(arena[V + 1:V + 9].reshape(1, 8, C), p)
    dout = arena[:8].reshape(1, 8, C)
    with pytest.raises(ValueError, match="embed_backward: .* overlaps"):
        posemb.embed_backward(arena[:V], None, dout, tokens)
    with pytest.raises(ValueError, match="add_positions_backward: dwpe .* overlaps dx"):
        posemb.add_positions_backward(arena[4:4 + MAXT], dout)
    assert np.array_equal(arena, before)
    # Halves of one array that share no element are fine, and compute what copies compute.
    both = np.zeros((V, 2 * C), np.float32)
    both[:, :C] = wte
    got = posemb.embed_forward(tokens, both[:, :C], None, None, out=both[:8, C:].reshape(1, 8, C))
    assert np.array_equal(got, wte[tokens])

    layer = posemb.LearnedPositionalEmbedding(16, C, seed=2)
    table = layer.table.copy()
    with pytest.raises(ValueError, match="forward_add: x .* overlaps the layer's table"):
        layer.forward_add(layer.table[2:10].reshape(1, 8, C))
    with pytest.raises(ValueError, match="backward_add: the layer's gradient .* overlaps dx"):
        layer.backward_add(layer.grad[0:8].reshape(1, 8, C))
    assert np.array_equal(layer.table, table) and not layer.grad.any()


@pytest.mark.parametrize("call", ["write_safetensors", "read_safetensors", "write_npy",
                                  "read_npy", "save_position_table", "load_position_table"])
def test_paths_with_a_nul_byte_are_refused(tmp_path, call):
    a = np.ones((3, 2), np.float32)
    real = tmp_path / "a.safetensors"
    posemb.write_safetensors(str(real), {"wpe.weight": a})
    posemb.write_npy(str(tmp_path / "b.npy"), a)
    names_before = sorted(os.listdir(tmp_path))
    cut = {"write_safetensors": str(tmp_path / "c.safetensors") + "\0.txt",
           "read_safetensors": str(real) + "\0zzz", "write_npy": str(tmp_path / "d.npy") + "\0",
           "read_npy": str(tmp_path / "b.npy") + "\0x",
           "save_position_table": str(tmp_path / "e.safetensors") + "\0.npy",
           "load_position_table": str(real) + "\0"}[call]
    calls = {"write_safetensors": lambda: posemb.write_safetensors(cut, {"w": a}),
             "read_safetensors": lambda: posemb.read_safetensors(cut),
             "write_npy": lambda: posemb.write_npy(cut, a),
             "read_npy": lambda: posemb.read_npy(cut),
             "save_position_table": lambda: posemb.save_position_table(cut,
                                                                        posemb.PositionTable(a)),
             "load_position_table": lambda: posemb.load_position_table(cut)}
    with pytest.raises(ValueError, match="NUL byte"):
        calls[call]()
    assert sorted(os.listdir(tmp_path)) == names_before


@pytest.mark.parametrize("dtype,bad,largest", [("f16", 65520.0, "65504"), ("f16", -3e38, "65504"),
                                               ("bf16", 3.4e38, "3.38953139e+38")])
def test_finite_values_that_would_become_infinity_are_refused(tmp_path, dtype, bad, largest):
    a = np.full((4, 3), 0.5, np.float32)
    a[2, 1] = bad
    path = str(tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match=rf"row 2, column 1 .*largest finite {dtype.upper()} "
                                         rf"\({re.escape(largest)}\)"):
        posemb.write_safetensors(path, {"w": a}, dtype=dtype)
    with pytest.raises(ValueError, match="row 2, column 1"):
        posemb.save_position_table(path, posemb.PositionTable(a), dtype=dtype)
    assert os.listdir(tmp_path) == []


def test_saved_tables_load_back_or_are_refused(tmp_path):
    path = str(tmp_path / "t.safetensors")
    values = np.arange(20, dtype=np.float32).reshape(10, 2)
    t = posemb.PositionTable(values)
    for rows in (11, 100, 2**64 - 1):
        with pytest.raises(ValueError, match=f"reserved_rows {rows} exceeds the table's 10 rows"):
            t.reserved_rows = rows
        with pytest.raises(ValueError, match="reserved_rows"):
            posemb.PositionTable(values, reserved_rows=rows)
    assert t.reserved_rows == 0 and t.positions == 10
    t.reserved_rows = 10
    assert t.positions == 0
    t.reserved_rows = 2
    for length in (10**18, 2**64 - 1):
        t.training_length = length
        with pytest.raises(ValueError, match="training_length"):
            posemb.save_position_table(path, t)
    t.training_length = 10**18 - 1
    posemb.save_position_table(path, t)
    back = posemb.load_position_table(path)
    assert back.training_length == t.training_length and back.reserved_rows == 2
    assert np.array_equal(back.values, values)
    nan = values.copy()
    nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 3, column 1"):
        posemb.save_position_table(str(tmp_path / "n.safetensors"), posemb.PositionTable(nan))


def test_contiguous_positions_past_int64_are_refused():
    for start, seq_len in ((2**63, 1), (2**63 - 1, 2), (2**64 - 5, 3)):
        with pytest.raises(IndexError, match="2\\^63 - 1"):
            posemb.resolve_positions(posemb.PositionSource.contiguous(start), 1, seq_len,
                                     2**64 - 1)
    last = posemb.resolve_positions(posemb.PositionSource.contiguous(2**63 - 2), 1, 2, 2**64 - 1)
    assert last.tolist() == [[2**63 - 2, 2**63 - 1]]


def test_arrays_in_the_wrong_byte_order_are_named():
    wte, wpe = tables()
    tokens = np.zeros((1, 2), np.int32)
    with pytest.raises(TypeError, match="wte must be a float32 array, got big-endian float32"):
        posemb.embed_forward(tokens, wte.astype(">f4"), wpe)
    with pytest.raises(TypeError, match="got big-endian int32"):
        posemb.embed_forward(tokens.astype(">i4"), wte, wpe)
    with pytest.raises(TypeError, match="big-endian"):
        posemb.LearnedPositionalEmbedding.from_table(wpe.astype(">f4"))


def test_tensor_names_that_are_not_strings_are_named(tmp_path):
    path = str(tmp_path / "w.safetensors")
    a = np.ones((2, 2), np.float32)
    for name, kind in ((1, "int"), (b"w", "bytes"), (None, "NoneType"), (("w",), "tuple")):
        with pytest.raises(TypeError, match=f"write_safetensors: tensors must map str names to "
                                            f"arrays, got the {kind} .* as a name"):
            posemb.write_safetensors(path, {name: a})
    assert os.listdir(tmp_path) == []
