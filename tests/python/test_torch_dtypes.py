"""posemb.torch as people use PyTorch: .half(), .bfloat16(), .double() and autocast, checked
against nn.Embedding and the plain torch formula in that dtype (forward and backward, gradcheck
for float64); positions as an int and as a tensor of any integer dtype agree; torch.jit.trace
records models using the modules and replays them on new inputs."""
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import posemb
import posemb.torch as pt

B, T, C, V, MAXT = 3, 6, 5, 13, 10
HALVES = (torch.float16, torch.bfloat16)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(20261201)


def wide(shape, gen, dtype):
    """Values over many binades (so that sums round), in dtype."""
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    return (x * torch.exp(2 * torch.randn(shape, generator=gen, dtype=torch.float64))).to(dtype)


def positions_of(kind, gen, idx):
    """(forward keyword arguments, (B, T) int64 positions with -1 for pads), computed here."""
    if kind == "contiguous":
        return dict(start=2), torch.arange(2, 2 + T).expand(B, T)
    if kind == "explicit":
        pos = torch.randint(0, MAXT, (B, T), generator=gen)
        pos[1, 2] = pos[1, 3]  # a repeated position: its gradient rows are summed
        return dict(position_ids=pos), pos
    mask = torch.ones(B, T, dtype=torch.long)
    mask[0, :2] = 0  # left padding
    mask[2, -1] = 0  # right padding
    return dict(attention_mask=mask), torch.where(mask == 1, mask.cumsum(1) - 1, -1)


def torch_formula(idx, wte, wpe, pos):
    """wte[idx] + wpe[pos] in the tables' dtype with torch's own ops (pads: the wte row)."""
    rows = F.embedding(pos.clamp(min=0), wpe)
    return F.embedding(idx, wte) + torch.where((pos >= 0)[..., None], rows, torch.zeros_like(rows))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["contiguous", "explicit", "mask"])
def test_token_position_module_in_every_dtype(gen, dtype, kind):
    emb = pt.TokenPositionEmbedding(V, MAXT, C).to(dtype)
    with torch.no_grad():
        emb.wte.weight.copy_(wide((V, C), gen, dtype))
        emb.wpe.weight.copy_(wide((MAXT, C), gen, dtype))
    idx = torch.randint(0, V, (B, T), generator=gen)
    idx[2, 1] = idx[0, 0]
    kw, pos = positions_of(kind, gen, idx)
    out = emb(idx, **kw)
    assert out.dtype == dtype
    # The forward: one rounding of the float32 sum, which is what torch's float16/bfloat16 add
    # does on the CPU; float64 exactly. So bit for bit against the formula in the dtype.
    ref = torch_formula(idx, emb.wte.weight.detach(), emb.wpe.weight.detach(), pos)
    assert torch.equal(out, ref)
    dout = wide((B, T, C), gen, dtype)
    out.backward(dout)
    assert emb.wte.weight.grad.dtype == dtype and emb.wpe.weight.grad.dtype == dtype
    # The gradients: summed in float32 (the kernels' order), rounded once to the dtype.
    wte32 = emb.wte.weight.detach().float().requires_grad_()
    wpe32 = emb.wpe.weight.detach().float().requires_grad_()
    torch_formula(idx, wte32, wpe32, pos).backward(dout.float())
    if dtype != torch.float64:
        assert torch.equal(emb.wte.weight.grad, wte32.grad.to(dtype))
        assert torch.equal(emb.wpe.weight.grad, wpe32.grad.to(dtype))
    # nn.Embedding in the dtype accumulates in the dtype: equal within the rounding of the few
    # (at most B * T) terms of a row, relative to the largest magnitude summed.
    wte_d = emb.wte.weight.detach().clone().requires_grad_()
    wpe_d = emb.wpe.weight.detach().clone().requires_grad_()
    torch_formula(idx, wte_d, wpe_d, pos).backward(dout)
    eps = torch.finfo(dtype if dtype != torch.float64 else torch.float32).eps
    tol = B * T * eps * float(dout.abs().max())
    for got, want in ((emb.wte.weight.grad, wte_d.grad), (emb.wpe.weight.grad, wpe_d.grad)):
        assert float((got.double() - want.double()).abs().max()) <= tol


@pytest.mark.parametrize("dtype", DTYPES)
def test_position_module_int_and_tensor_positions_agree(gen, dtype):
    lpe = pt.LearnedPositionalEmbedding(MAXT, C).to(dtype)
    with torch.no_grad():
        lpe.weight.copy_(wide((MAXT, C), gen, dtype))
    dout = wide((4, C), gen, dtype)
    grads, outs = [], []
    for positions, start in ((4, 3), (torch.arange(3, 7), 0), (torch.arange(3, 7)[None], 0)):
        lpe.weight.grad = None
        out = lpe(positions, start)
        out = out[0] if out.dim() == 3 else out
        assert out.dtype == dtype
        out.backward(dout)
        outs.append(out.detach())
        grads.append(lpe.weight.grad)
    assert torch.equal(outs[0], lpe.weight.detach()[3:7])
    for o, g in zip(outs[1:], grads[1:]):
        assert torch.equal(o, outs[0]) and torch.equal(g, grads[0])
    # nn.Embedding in the dtype (each row used once: the gradient is dout itself)
    ref = nn.Embedding.from_pretrained(lpe.weight.detach().clone(), freeze=False)
    ref(torch.arange(3, 7)).backward(dout)
    assert torch.equal(outs[0], ref(torch.arange(3, 7)).detach())
    if dtype != torch.float64:
        assert torch.equal(grads[0], ref.weight.grad)
    else:  # float64 gradients are computed in float32: dout rounded once
        assert torch.equal(grads[0], ref.weight.grad.float().double())


@pytest.mark.parametrize("int_dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
def test_positions_of_any_integer_dtype(gen, int_dtype):
    lpe = pt.LearnedPositionalEmbedding(MAXT, C)
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    pos = torch.randint(0, MAXT, (B, T), generator=gen)
    idx = torch.randint(0, V, (B, T), generator=gen)
    assert torch.equal(lpe(pos.to(int_dtype)), lpe(pos))
    assert torch.equal(emb(idx, position_ids=pos.to(int_dtype)), emb(idx, position_ids=pos))
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 0] = 0
    assert torch.equal(emb(idx, attention_mask=mask.to(int_dtype)), emb(idx, attention_mask=mask))
    # a 0-d integer tensor is a seq_len, like an int
    assert torch.equal(lpe(torch.tensor(4, dtype=int_dtype), 2), lpe(4, 2))


def test_gradcheck_float64_on_any_values():
    # float64 tables are looked up exactly, so gradcheck holds with its default tolerances on
    # values that are not float32 numbers.
    g = torch.Generator().manual_seed(7)
    wte = torch.randn(V, C, generator=g, dtype=torch.float64, requires_grad=True)
    wpe = torch.randn(MAXT, C, generator=g, dtype=torch.float64, requires_grad=True)
    assert wte.float().double().ne(wte).any()
    idx = torch.randint(0, V, (2, 4), generator=g)
    idx[1] = idx[0, 0]  # repeated rows
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 0]])
    for kw in (dict(), dict(start=3), dict(attention_mask=mask), dict(separator=int(idx[0, 1])),
               dict(position_ids=torch.tensor([[3, 3, 0, 7], [1, 2, 2, 1]]))):
        fn = lambda a, b: pt.token_position_embedding(idx, a, b, **kw)
        assert torch.autograd.gradcheck(fn, (wte, wpe)), kw
    int16 = torch.tensor([4, 2], dtype=torch.int16)
    for positions in (3, torch.tensor([[1, 7, 1], [0, 0, 2]]), int16):
        assert torch.autograd.gradcheck(lambda w: pt.position_embedding(w, positions, 0), (wpe,))


def test_autocast_leaves_the_modules_in_their_dtype_as_nn_embedding(gen):
    for dtype in (torch.float32, torch.bfloat16):
        emb = pt.TokenPositionEmbedding(V, MAXT, C).to(dtype)
        ref = nn.Embedding.from_pretrained(emb.wte.weight.detach().clone(), freeze=False)
        idx = torch.randint(0, V, (B, T), generator=gen)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = emb(idx)
            expect = ref(idx) + emb.wpe.weight.detach()[:T]
            lin = nn.Linear(C, 2).to(dtype)
            loss = lin(out).float().square().sum()
        assert out.dtype == expect.dtype == dtype
        assert torch.equal(out, expect)
        loss.backward()
        assert emb.wte.weight.grad.dtype == dtype and emb.wpe.weight.grad.dtype == dtype


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = pt.TokenPositionEmbedding(V, MAXT, C)
        self.extra = pt.LearnedPositionalEmbedding(MAXT, C, seed=3)
        self.head = nn.Linear(C, 2)

    def forward(self, idx, position_ids, mask):
        x = self.emb(idx, position_ids=position_ids) + self.emb(idx, attention_mask=mask)
        return self.head(x + self.extra(idx.shape[1]) + self.extra(position_ids))


def test_jit_trace_records_the_modules_and_replays_new_inputs(gen):
    model = Model()
    make = lambda b, t: (torch.randint(0, V, (b, t), generator=gen),
                         torch.randint(0, MAXT, (b, t), generator=gen),
                         torch.ones(b, t, dtype=torch.long))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, make(2, 4))
    assert not [w for w in caught if "posemb" in w.filename], [str(w.message) for w in caught]
    for b, t in ((2, 4), (3, 7), (1, 5)):  # a new batch and a new length
        inputs = make(b, t)
        inputs[2][0, :2] = 0
        model.zero_grad()
        want = model(*inputs)
        want.square().sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        got = traced(*inputs)
        got.square().sum().backward()
        assert torch.equal(got, want)
        for p, g in zip(model.parameters(), grads):
            assert torch.equal(p.grad, g)


def test_rotary_embedding_in_every_dtype(gen):
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    q = torch.randn(B, T, 2, 4, generator=gen)
    k = torch.randn(B, T, 2, 4, generator=gen)
    q32, k32 = rope(q, k)
    for dtype in HALVES + (torch.float64,):
        qd, kd = q.to(dtype).requires_grad_(), k.to(dtype).requires_grad_()
        got_q, got_k = rope(qd, kd)
        assert got_q.dtype == got_k.dtype == dtype
        want_q, want_k = rope(qd.detach().float(), kd.detach().float())
        assert torch.equal(got_q, want_q.to(dtype)) and torch.equal(got_k, want_k.to(dtype))
        (got_q.sum() + got_k.sum()).backward()
        assert qd.grad.dtype == dtype
    assert torch.equal(rope(q.double(), k.double())[0], q32.double())


def test_type_errors_say_what_was_expected():
    lpe = pt.LearnedPositionalEmbedding(MAXT, C)
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.zeros(B, T, dtype=torch.long)
    expect = "an int \\(seq_len\\) or an integer tensor of position ids"
    for bad, got in (("x", "got str"), (2.5, "got float"), (torch.tensor(2.0), "float32 scalar")):
        with pytest.raises(TypeError,
                           match=f"position_embedding: positions must be {expect}.*{got}"):
            lpe(bad)
    with pytest.raises(TypeError,
                       match="position_ids must be an integer tensor .* got torch.float32"):
        lpe(torch.arange(4.0))
    with pytest.raises(TypeError, match="position_ids must be an integer tensor .* got torch.bool"):
        emb(idx, position_ids=torch.ones(B, T, dtype=torch.bool))
    with pytest.raises(TypeError,
                       match="idx must be an int64 or int32 tensor .* got torch.float32"):
        emb(idx.float())
    with pytest.raises(TypeError, match="the tables must have one dtype, got wte torch.float16, "
                                        "wpe torch.float32"):
        pt.token_position_embedding(idx, emb.wte.weight.half(), emb.wpe.weight)
    with pytest.raises(TypeError, match="weight must be a float32, float16, bfloat16 or float64 "
                                        "tensor, got torch.complex64"):
        pt.position_embedding(torch.zeros(4, 2, dtype=torch.complex64), 2)
    with pytest.raises(ValueError, match="beyond float32's range"):
        pt.position_embedding(torch.full((4, 2), 1e300, dtype=torch.float64), torch.tensor([1]))


def test_too_long_names_the_calls_numbers():
    lpe = pt.LearnedPositionalEmbedding(64, 64)
    for positions in (torch.arange(100), torch.arange(100)[None], 100):
        with pytest.raises(posemb.SequenceTooLong) as e:
            lpe(positions)
        msg = str(e.value)
        assert "seq_len = 100 positions starting at start = 0 need rows [0, 100)" in msg, msg
        assert "has max_seq_len = 64 rows" in msg and "at least 100 rows" in msg, msg
    with pytest.raises(posemb.SequenceTooLong) as e:
        lpe(torch.tensor([[5, 70], [3, 200]]))
    msg = str(e.value)
    assert "seq_len = 198 positions starting at start = 3 need rows [3, 201)" in msg, msg
    assert "4 explicit position ids 3..200 in a (2, 2) batch" in msg, msg
    assert "the first past the table: batch row 0, token 1, explicit position id 70" in msg, msg
    assert "at least 201 rows" in msg, msg


class Broadcast(nn.Module):
    """(T,) position ids broadcast over the batch, and a seq_len from the input's shape."""

    def __init__(self):
        super().__init__()
        self.emb = pt.TokenPositionEmbedding(V, MAXT, C)

    def forward(self, idx):
        return (self.emb(idx, position_ids=torch.arange(idx.shape[1]).flip(0)) +
                self.emb.wpe(idx.shape[1]))


def test_jit_trace_follows_batch_and_length_without_tracer_warnings(gen):
    model = Broadcast()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, torch.randint(0, V, (2, 4), generator=gen))
    assert not [w for w in caught if "posemb" in w.filename], [str(w.message) for w in caught]
    for b, t in ((1, 3), (4, 9)):
        idx = torch.randint(0, V, (b, t), generator=gen)
        assert torch.equal(traced(idx), model(idx))


@pytest.mark.parametrize("half", HALVES)
def test_16_bit_tables_are_read_in_place_and_rows_are_views(monkeypatch, half):
    emb = pt.TokenPositionEmbedding(V, MAXT, C).to(half)
    seen = []
    real = posemb._posemb.embed_forward

    def spy(tokens, wte, wpe, *args, **kw):
        seen.append((wte.__array_interface__["data"][0], wpe.__array_interface__["data"][0]))
        return real(tokens, wte, wpe, *args, **kw)

    monkeypatch.setattr(posemb._posemb, "embed_forward", spy)
    emb(torch.zeros(B, T, dtype=torch.long))
    assert seen == [(emb.wte.weight.data_ptr(), emb.wpe.weight.data_ptr())]  # no float32 copy
    for dtype in DTYPES:
        lpe = pt.LearnedPositionalEmbedding(MAXT, C).to(dtype)
        rows = lpe(4, 2)
        assert rows.dtype == dtype and rows._base is lpe.weight
        assert rows.data_ptr() == lpe.weight[2].data_ptr()


def test_embed_forward_reads_bfloat16_bits(gen):
    wte = wide((V, C), gen, torch.bfloat16)
    wpe = wide((MAXT, C), gen, torch.bfloat16)
    tokens = torch.randint(0, V, (B, T), generator=gen).numpy()
    bits = lambda t: t.view(torch.int16).numpy()
    got = posemb.embed_forward(tokens, bits(wte), bits(wpe), bfloat16=True)
    want = posemb.embed_forward(tokens, wte.float().numpy(), wpe.float().numpy())
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    got = posemb.embed_forward(tokens, bits(wte).view("uint16"), bfloat16=True)  # token rows only
    assert got.tobytes() == wte.float().numpy()[tokens].tobytes()
    with pytest.raises(TypeError, match="wte must be an int16 or uint16 array of bfloat16 bits "
                                        r"\(bfloat16=True\), got float32"):
        posemb.embed_forward(tokens, wte.float().numpy(), bfloat16=True)


class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                                        "num_attention_heads": 2, "max_position_embeddings": 64},
                                        "half", "BTHD")

    def forward(self, q, k):
        return self.rope(q, k, seq_len=64)


def test_jit_trace_of_rotary_embedding_follows_batch_and_length(gen):
    model = Rotary()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, (torch.randn(2, 4, 2, 4), torch.randn(2, 4, 2, 4)))
    assert not [w for w in caught if "posemb" in w.filename], [str(w.message) for w in caught]
    q = torch.randn(3, 9, 2, 4, generator=gen, requires_grad=True)
    k = torch.randn(3, 9, 2, 4, generator=gen, requires_grad=True)
    got, want = traced(q, k), model(q, k)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    sum(t.sum() for t in got).backward()
    dq = q.grad.clone()
    q.grad = None
    sum(t.sum() for t in want).backward()
    assert torch.equal(q.grad, dq)


def test_a_trace_saves_and_loads_where_posemb_torch_is_imported(gen, tmp_path):
    model = Model()
    make = lambda b, t: (torch.randint(0, V, (b, t), generator=gen),
                         torch.randint(0, MAXT, (b, t), generator=gen),
                         torch.ones(b, t, dtype=torch.long))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, make(2, 4))
    torch.jit.save(traced, str(tmp_path / "model.pt"))
    loaded = torch.jit.load(str(tmp_path / "model.pt"))
    inputs = make(3, 7)
    want = model(*inputs)
    want.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    got = loaded(*inputs)
    got.square().sum().backward()
    assert torch.equal(got, want)
    for p, g in zip(loaded.parameters(), grads):
        assert torch.equal(p.grad, g)
    # another process: torch.jit.load after `import posemb.torch` (which registers the operators)
    torch.save((inputs, want.detach()), str(tmp_path / "io.pt"))
    script = ("import sys, torch, posemb.torch\n"
              "inputs, want = torch.load(sys.argv[2])\n"
              "got = torch.jit.load(sys.argv[1])(*inputs)\n"
              "sys.exit(0 if torch.equal(got, want) else 3)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "model.pt"),
                           str(tmp_path / "io.pt")], env=dict(os.environ), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_inference_mode_and_no_grad_give_the_same_values(gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.randint(0, V, (B, T), generator=gen)
    pos = torch.randint(0, MAXT, (B, T), generator=gen)
    want = [emb(idx).detach(), emb(idx, position_ids=pos).detach(), emb.wpe(pos).detach()]
    for mode in (torch.inference_mode, torch.no_grad):
        with mode():
            got = [emb(idx), emb(idx, position_ids=pos), emb.wpe(pos)]
        assert all(torch.equal(g, w) and not g.requires_grad for g, w in zip(got, want))


def test_float64_infinities_and_nans_give_the_float64_formula():
    # inf - inf is NaN: the parts after the first are 0 where a value is not finite, so the sum
    # is the plain float64 formula bit for bit, infinities, NaNs and finite values mixed.
    inf, nan = float("inf"), float("nan")
    values = torch.tensor([inf, -inf, nan, 1.0 / 3, -2.5e38, 1e-30, 0.0, -7.25],
                          dtype=torch.float64)
    g = torch.Generator().manual_seed(11)
    wte = values[torch.randint(0, 8, (V, C), generator=g)]
    wpe = values[torch.randint(0, 8, (MAXT, C), generator=g)]
    wte[0] = torch.tensor([inf, -inf, nan, 1.0])[:, None].expand(4, C // 4 + 1).flatten()[:C]
    idx = torch.randint(0, V, (B, T), generator=g)
    idx[0, :3] = 0
    pos = torch.randint(0, MAXT, (B, T), generator=g)
    bits = lambda t: t.view(torch.int64)
    for kw, p in ((dict(), torch.arange(T).expand(B, T)), (dict(position_ids=pos), pos)):
        got = pt.token_position_embedding(idx, wte, wpe, **kw)
        assert torch.equal(bits(got), bits(wte[idx] + wpe[p])), kw
    assert torch.equal(bits(pt.position_embedding(wpe, pos)), bits(wpe[pos]))
    got = pt.token_position_embedding(torch.tensor([[0, 1, 2]]),
                                      torch.tensor([[inf], [-inf], [nan]], dtype=torch.float64),
                                      torch.zeros(4, 1, dtype=torch.float64))
    assert got[0, :2, 0].tolist() == [inf, -inf] and bool(got[0, 2, 0].isnan())


def test_float64_values_beyond_float32_are_refused_with_an_infinity_in_the_table():
    # The check is per element: an infinity elsewhere in the table no longer hides 1e300.
    inf = float("inf")
    for table in (torch.tensor([[inf], [1e300]], dtype=torch.float64),
                  torch.tensor([[1.0, -inf], [2.0, -1e300]], dtype=torch.float64)):
        with pytest.raises(ValueError, match=r"position_embedding: a float64 table holds -?1e\+300 "
                                             r"at row 1, column \d, beyond float32's range"):
            pt.position_embedding(table, torch.tensor([1]))
        with pytest.raises(ValueError, match="token_position_embedding: .* beyond float32's"):
            pt.token_position_embedding(torch.tensor([[0, 1]]), table, torch.zeros_like(table))
    fine = torch.tensor([[3.4028235e38], [-3.4028235e38]], dtype=torch.float64)  # float32's max
    assert torch.equal(pt.position_embedding(fine, torch.tensor([0, 1])), fine)


@pytest.mark.parametrize("dtype", DTYPES)
def test_token_position_reset_parameters_seeds_as_the_constructor(dtype):
    # wte N(0, stddev) from seed, wpe by init from (seed + 1) mod 2^64 (seed 2^64 - 1: wpe from
    # 0), in float32, rounded or widened to the dtype; the same Parameters, written over
    for seed, init in ((9, "sinusoidal"), (2**64 - 1, "normal")):
        fresh = pt.TokenPositionEmbedding(V, MAXT, C, init=init, stddev=0.5, seed=seed)
        emb = pt.TokenPositionEmbedding(V, MAXT, C, init=init, stddev=0.5, seed=seed).to(dtype)
        weights = (emb.wte.weight, emb.wpe.weight)
        with torch.no_grad():
            for w in weights:
                w.fill_(7)
        emb.reset_parameters()
        assert (emb.wte.weight, emb.wpe.weight) == weights
        for w, want in zip(weights, (fresh.wte.weight, fresh.wpe.weight)):
            assert w.dtype == dtype and w.requires_grad
            assert torch.equal(w, want.detach().to(dtype))
    alone = pt.LearnedPositionalEmbedding(MAXT, C, init="normal", stddev=0.5, seed=0)
    assert torch.equal(emb.wpe.weight, alone.weight.detach().to(dtype))  # (2^64 - 1 + 1) mod 2^64


@pytest.mark.parametrize("dtype", DTYPES)
def test_reset_parameters_in_every_dtype(dtype):
    # posemb's initializers fill float32: another dtype gets those values rounded (float16,
    # bfloat16) or widened exactly (float64), the weight staying the same Parameter.
    for init in ("normal", "sinusoidal"):
        want = pt.LearnedPositionalEmbedding(MAXT, C, init=init, seed=9).weight.detach()
        lpe = pt.LearnedPositionalEmbedding(MAXT, C, init=init, seed=9).to(dtype)
        weight = lpe.weight
        with torch.no_grad():
            weight.zero_()
        lpe.reset_parameters()
        assert lpe.weight is weight and weight.dtype == dtype and weight.requires_grad
        assert torch.equal(weight, want.to(dtype))  # float64: the float32 values widened
