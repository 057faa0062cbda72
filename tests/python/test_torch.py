"""posemb.torch: the modules run posemb's kernels on the tensors' own memory, agree with
nn.Embedding + slicing, pass gradcheck, give bitwise identical gradients for any thread count,
and load GPT-2-style state dicts."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import posemb
import posemb.torch as pt
from conftest import reference_backward, reference_positions

B, T, C, V, MAXT = 3, 6, 5, 13, 8


def ptr(a):
    return a.__array_interface__["data"][0]


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(20261130)


class Spy:
    """Records the data pointer of every array argument of the wrapped extension functions."""

    def __init__(self, monkeypatch, *names):
        self.calls = []
        for name in names:
            real = getattr(posemb._posemb, name)

            def wrapper(*args, _real=real, _name=name, **kw):
                self.calls.append((_name, [ptr(a) if isinstance(a, np.ndarray) else None
                                           for a in args],
                                   {k: ptr(v) for k, v in kw.items() if isinstance(v, np.ndarray)}))
                return _real(*args, **kw)

            monkeypatch.setattr(posemb._posemb, name, wrapper)


def test_fused_module_runs_on_the_tensors_own_memory(monkeypatch, gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int32)
    spy = Spy(monkeypatch, "embed_forward", "embed_backward")
    out = emb(idx)
    seen = {}
    out.register_hook(lambda g: seen.setdefault("dout", g))
    out.backward(torch.randn(B, T, C, generator=gen))
    (fname, fargs, fkw), (bname, bargs, _) = spy.calls
    assert fname == "embed_forward" and bname == "embed_backward"
    # forward: wte, wpe and out are the tensors themselves; the tokens are this call's own copy
    # of idx (issue 26: the backward must read what the forward read, whatever happens to idx)
    assert fargs[1:3] == [emb.wte.weight.data_ptr(), emb.wpe.weight.data_ptr()]
    assert fargs[0] != idx.data_ptr()
    assert fkw["out"] == out.data_ptr()
    # backward: the gradients it wrote became .grad as they are; dout is autograd's tensor
    assert bargs[:3] == [emb.wte.weight.grad.data_ptr(), emb.wpe.weight.grad.data_ptr(),
                         seen["dout"].data_ptr()]
    assert bargs[3] == fargs[0]  # the forward's copy of the ids


def test_position_module_lookup_is_a_view_of_the_weight(gen):
    pe = pt.LearnedPositionalEmbedding(MAXT, C)
    rows = pe(4, start=3)
    assert rows.shape == (4, C) and rows._base is pe.weight
    assert rows.data_ptr() == pe.weight.data_ptr() + 3 * C * 4
    with pytest.raises(RuntimeError, match="view"):
        rows.add_(1)  # autograd forbids writing the table through the view
    d = torch.randn(4, C, generator=gen)
    pe(4, start=3).backward(d)
    expected = torch.zeros(MAXT, C)
    expected[3:7] = d
    assert torch.equal(pe.weight.grad, expected)
    with pytest.raises(posemb.SequenceTooLong) as info:
        pe(6, start=3)
    assert (info.value.seq_len, info.value.start, info.value.max_seq_len) == (6, 3, MAXT)


def test_position_ids_gather_and_scatter(gen):
    pe = pt.LearnedPositionalEmbedding(MAXT, C, init="sinusoidal")
    np.testing.assert_array_equal(pe.weight.detach().numpy(),
                                  posemb.sinusoidal_positional_encoding(MAXT, C))
    ids = torch.randint(0, MAXT, (B, T), generator=gen)
    out = pe(ids)
    assert torch.equal(out, pe.weight.detach()[ids])
    d = torch.randn(B, T, C, generator=gen)
    out.backward(d)
    ref = torch.zeros(MAXT, C, dtype=torch.float64).index_add_(0, ids.reshape(-1),
                                                                d.double().reshape(-1, C))
    torch.testing.assert_close(pe.weight.grad.double(), ref, rtol=0, atol=B * T * 2**-22)
    assert pe(ids[0]).shape == (T, C)
    with pytest.raises(posemb.SequenceTooLong):
        pe(torch.tensor([[0, MAXT]]))
    with pytest.raises(IndexError, match="negative"):
        pe(torch.tensor([-1]))


def gpt2_reference(emb, idx, position_ids=None, attention_mask=None, start=0):
    """nn.Embedding + slicing, as GPT-2 code writes it; pads (mask 0) get no position row."""
    wte, wpe = emb.wte.weight, emb.wpe.weight
    if attention_mask is not None:
        keep = attention_mask.bool()
        pos = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        return F.embedding(idx, wte) + F.embedding(pos, wpe) * keep[..., None]
    if position_ids is not None:
        return F.embedding(idx, wte) + F.embedding(position_ids, wpe)
    return F.embedding(idx, wte) + wpe[start:start + idx.shape[1]]


def test_every_position_source_against_nn_embedding(gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C, seed=3)
    idx = torch.randint(0, V, (B, T), generator=gen)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1] * 6, [1, 1, 1, 0, 0, 0]])
    ids = torch.randint(0, MAXT, (B, T), generator=gen)
    cases = [dict(), dict(start=2), dict(position_ids=ids), dict(position_ids=torch.arange(T)),
             dict(attention_mask=mask), dict(attention_mask=mask.bool())]
    for kw in cases:
        ours = emb(idx, **kw)
        ref_kw = dict(kw)
        if "position_ids" in ref_kw and ref_kw["position_ids"].dim() == 1:
            ref_kw["position_ids"] = ref_kw["position_ids"].expand(B, T)
        ref = gpt2_reference(emb, idx, **ref_kw)
        assert torch.equal(ours, ref), kw  # the same float32 add: bit for bit
        d = torch.randn(B, T, C, generator=gen)
        emb.zero_grad(set_to_none=True)
        ours.backward(d)
        got = (emb.wte.weight.grad.clone(), emb.wpe.weight.grad.clone())
        emb.zero_grad(set_to_none=True)
        ref.backward(d)
        # float32 sums of at most B*T contributions of |d| < 6: bound (B*T) * 6 * 2^-23
        for a, b in zip(got, (emb.wte.weight.grad, emb.wpe.weight.grad)):
            torch.testing.assert_close(a, b, rtol=0, atol=B * T * 6 * 2**-23)


def test_packed_positions_and_frozen_tables(gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.randint(1, V, (B, T), generator=gen)
    idx[0, 2] = idx[2, 4] = 0
    pos = torch.from_numpy(reference_positions("packed", B, T, 0, idx.numpy()))
    out = emb(idx, separator=0)
    assert torch.equal(out, emb.wte.weight.detach()[idx] + emb.wpe.weight.detach()[pos])
    d = torch.randn(B, T, C, generator=gen)
    for frozen in ("wte", "wpe"):
        emb.zero_grad(set_to_none=True)
        getattr(emb, frozen).weight.requires_grad_(False)
        emb(idx, separator=0).backward(d)
        assert getattr(emb, frozen).weight.grad is None
        live = emb.wpe if frozen == "wte" else emb.wte
        ref = np.zeros(tuple(live.weight.shape), np.float32)
        reference_backward(ref if frozen == "wpe" else None, ref if frozen == "wte" else None,
                           d.numpy(), idx.numpy(), pos.numpy())
        assert live.weight.grad.numpy().tobytes() == ref.tobytes()
        getattr(emb, frozen).weight.requires_grad_(True)


def test_errors_and_guards(gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.randint(0, V, (B, T), generator=gen)
    with pytest.raises(posemb.SequenceTooLong, match="embed_forward"):
        emb(idx, start=MAXT - T + 1)
    bad = idx.clone()
    bad[1, 2] = V
    with pytest.raises(IndexError, match="token id 13 at batch row 1, token 2"):
        emb(bad)
    with pytest.raises(ValueError, match="one of position_ids, attention_mask"):
        emb(idx, position_ids=torch.zeros(B, T, dtype=torch.long),
            attention_mask=torch.ones(B, T))
    with pytest.raises(ValueError, match="padding mask value 2"):
        emb(idx, attention_mask=torch.full((B, T), 2))
    with pytest.raises(ValueError, match="CPU"):
        emb(idx.to("meta"))
    out = emb(idx)
    idx.add_(0)  # changed in place after the forward: autograd refuses the backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    emb(idx).sum().backward()  # a non-contiguous dout (expanded ones) works


def test_gradcheck_float64():
    # The kernels compute in float32. On a dyadic grid (multiples of 2^-6 below 2) with steps of
    # eps = 2^-6, every input, perturbed input, sum and difference is exact in float32, so the
    # float64 gradcheck through exact casts checks the Jacobian with zero tolerance.
    g = torch.Generator().manual_seed(5)
    wte = (torch.randint(-64, 64, (V, C), generator=g) / 64).double().requires_grad_()
    wpe = (torch.randint(-64, 64, (MAXT, C), generator=g) / 64).double().requires_grad_()
    idx = torch.randint(0, V, (2, 4), generator=g)
    idx[1] = idx[0, 0]  # repeated rows
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 0]])
    for kw in (dict(), dict(start=3), dict(attention_mask=mask), dict(separator=int(idx[0, 1])),
               dict(position_ids=torch.tensor([[3, 3, 0, 7], [1, 2, 2, 1]]))):
        fn = lambda a, b: pt.token_position_embedding(idx, a.float(), b.float(), **kw).double()
        assert torch.autograd.gradcheck(fn, (wte, wpe), eps=2**-6, atol=0, rtol=0), kw
    for positions in (3, torch.tensor([[1, 7, 1], [0, 0, 2]])):
        fn = lambda w: pt.position_embedding(w.float(), positions, 0).double()
        assert torch.autograd.gradcheck(fn, (wpe,), eps=2**-6, atol=0, rtol=0)


def test_double_backward_gradgradcheck_float64():
    # create_graph=True differentiates the backward (a gradient penalty): the ops are linear, so
    # the backward's backward is the forward again. On the dyadic grid above (the incoming
    # gradients too) every step is exact in float32 (the float64 tables' three parts included):
    # tolerance zero. One table frozen takes the other path of the token-position backward.
    g = torch.Generator().manual_seed(6)
    grid = lambda *shape: (torch.randint(-64, 64, shape, generator=g) / 64).double()
    wte, wpe = grid(5, 2).requires_grad_(), grid(MAXT, 2).requires_grad_()  # small: quick
    idx = torch.randint(0, 5, (2, 4), generator=g)
    idx[1] = idx[0, 0]
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 0]])
    dout = grid(2, 4, 2).requires_grad_()  # (gradgradcheck differentiates for it too)
    check = lambda fn, inputs, grads: torch.autograd.gradgradcheck(fn, inputs, grads, eps=2**-6,
                                                                   atol=0, rtol=0)
    for kw in (dict(), dict(start=3), dict(attention_mask=mask), dict(separator=int(idx[0, 1])),
               dict(position_ids=torch.tensor([[3, 3, 0, 7], [1, 2, 2, 1]]))):
        fn = lambda a, b: pt.token_position_embedding(idx, a, b, **kw)
        assert check(fn, (wte, wpe), (dout,)), kw
        assert check(lambda a: fn(a, wpe.detach()), (wte,), (dout,)), kw
        assert check(lambda b: fn(wte.detach(), b), (wpe,), (dout,)), kw
        f32 = lambda a, b: fn(a.float(), b.float()).double()  # the kernels' own float32 path
        assert check(f32, (wte, wpe), (dout,)), kw
    for positions in (3, torch.tensor([[1, 7, 1], [0, 0, 2]])):
        shape = (3, 2) if isinstance(positions, int) else (2, 3, 2)
        assert check(lambda w: pt.position_embedding(w, positions, 0), (wpe,),
                     (grid(*shape).requires_grad_(),))
    # The rotation's cos and sin are not on the grid: float32's rounding over eps = 2^-6.
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    q, k = grid(2, 4, 2, 4).requires_grad_(), grid(2, 4, 2, 4).requires_grad_()
    for kw in (dict(start=5), dict(attention_mask=mask)):
        assert torch.autograd.gradgradcheck(lambda a, b: rope(a, b, **kw), (q, k),
                                            (grid(2, 4, 2, 4).requires_grad_(),
                                             grid(2, 4, 2, 4).requires_grad_()), eps=2**-6,
                                            atol=1e-5, rtol=1e-4), kw


def test_a_gradient_penalty_matches_nn_embedding(gen):
    # d/dw |dL/dw|^2 with L = sum(out^2): through posemb's backward recorded by create_graph
    # and through F.embedding, in float64 on a dyadic grid (exact on both sides).
    grid = lambda *shape: (torch.randint(-64, 64, shape, generator=gen) / 64).double()
    emb = pt.TokenPositionEmbedding(V, MAXT, C).double()
    with torch.no_grad():
        emb.wte.weight.copy_(grid(V, C))
        emb.wpe.weight.copy_(grid(MAXT, C))
    idx = torch.randint(0, V, (B, T), generator=gen)
    wte = emb.wte.weight.detach().clone().requires_grad_()
    wpe = emb.wpe.weight.detach().clone().requires_grad_()
    for params, out in ((list(emb.parameters()), emb(idx)),
                        ([wte, wpe], F.embedding(idx, wte) + wpe[:T])):
        grads = torch.autograd.grad(out.square().sum(), params, create_graph=True)
        sum(g.square().sum() for g in grads).backward()
    assert torch.equal(emb.wte.weight.grad, wte.grad)
    assert torch.equal(emb.wpe.weight.grad, wpe.grad)
    assert wte.grad.abs().sum() > 0


def test_gradients_are_bitwise_identical_across_runs_and_threads():
    # Large enough for the kernels to run on several threads (2^18 elements and more).
    Bb, Tt, Cc, Vv = 4, 256, 256, 300
    g = torch.Generator().manual_seed(9)
    emb = pt.TokenPositionEmbedding(Vv, Tt, Cc)
    idx = torch.randint(0, Vv, (Bb, Tt), generator=g)
    d = torch.randn(Bb, Tt, Cc, generator=g)
    before = torch.get_num_threads()
    grads = []
    try:
        for threads in (1, 2, 2, 1):
            torch.set_num_threads(threads)
            emb.zero_grad(set_to_none=True)
            emb(idx).backward(d)
            grads.append((emb.wte.weight.grad.numpy().tobytes(),
                          emb.wpe.weight.grad.numpy().tobytes()))
    finally:
        torch.set_num_threads(before)
    assert all(x == grads[0] for x in grads)
    # and they are the serial ascending-(b, t) sums
    rte, rpe = np.zeros((Vv, Cc), np.float32), np.zeros((Tt, Cc), np.float32)
    reference_backward(rte, rpe, d.numpy(), idx.numpy(),
                       reference_positions("contiguous", Bb, Tt, 0))
    assert grads[0] == (rte.tobytes(), rpe.tobytes())


class Gpt2Embeddings(nn.Module):
    """The nn.Embedding-based input layer of GPT-2-style code (nanoGPT, HF's GPT2Model)."""

    def __init__(self, vocab, max_seq_len, dim):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_seq_len, dim)

    def forward(self, idx):
        return self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))


def test_state_dicts_use_gpt2_names(gen):
    ref = Gpt2Embeddings(V, MAXT, C)
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    assert set(emb.state_dict()) == {"wte.weight", "wpe.weight"}
    emb.load_state_dict(ref.state_dict())
    idx = torch.randint(0, V, (B, T), generator=gen)
    assert torch.equal(emb(idx), ref(idx))
    back = Gpt2Embeddings(V, MAXT, C)
    back.load_state_dict(emb.state_dict())
    assert torch.equal(back.wpe.weight, ref.wpe.weight)


class TinyLM(nn.Module):
    def __init__(self, embeddings, vocab, dim):
        super().__init__()
        self.emb = embeddings
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx, targets):
        logits = self.head(torch.tanh(self.ln(self.emb(idx))))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_training_matches_nn_embedding():
    # The same model with either input layer, trained 8 AdamW steps from the same weights.
    # Forwards agree bit for bit; gradients may differ in the order of float32 sums (each
    # relative 2^-24 per add), which AdamW's normalized steps carry into the weights at about
    # lr * 1e-6: losses agree to 1e-5 relative.
    Vv, Tt, Cc, Bb = 37, 16, 24, 8
    torch.manual_seed(0)
    ref = TinyLM(Gpt2Embeddings(Vv, Tt, Cc), Vv, Cc)
    ours = TinyLM(pt.TokenPositionEmbedding(Vv, Tt, Cc), Vv, Cc)
    ours.load_state_dict(ref.state_dict())
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, Vv, (8, Bb, Tt + 1), generator=g)
    losses = {}
    for name, model in (("ref", ref), ("ours", ours)):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses[name] = []
        for batch in data:
            loss = model(batch[:, :-1], batch[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    assert losses["ours"][0] == losses["ref"][0]
    np.testing.assert_allclose(losses["ours"], losses["ref"], rtol=1e-5)
    assert losses["ours"][-1] < losses["ours"][0]  # it trained


def _vm_flags(address):
    """The VmFlags of the mapping of this process that holds address (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _thp_available():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" not in f.read()
    except OSError:
        return False


def test_large_gradients_ask_for_huge_pages(gen):
    # A token table gradient of 3 MiB is a mapping that asks for transparent huge pages (each
    # 4 KiB page would cost a page fault when first touched); a small one (13 x 5 floats) comes
    # from torch's allocator (whose memory may sit anywhere: only its values are checked).
    big = pt.TokenPositionEmbedding(1024, MAXT, 768, seed=1)
    small = pt.TokenPositionEmbedding(V, MAXT, C, seed=1)
    for module, vocab in ((big, 1024), (small, V)):
        idx = torch.randint(0, vocab, (B, T), generator=gen)
        module(idx).sum().backward()
        grad = module.wte.weight.grad
        assert grad.shape == module.wte.weight.shape
        counts = torch.bincount(idx.flatten(), minlength=vocab)
        want = counts.to(torch.float32)[:, None].expand_as(grad)
        assert torch.equal(grad, want)  # untouched rows read as zeros
        if module is big and _thp_available():
            assert "hg" in _vm_flags(grad.data_ptr())


def test_masks_broadcast_over_the_batch_as_position_ids_do(gen):
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    idx = torch.randint(0, V, (B, T), generator=gen)
    q = torch.randn(B, T, 2, 4, generator=gen)
    row = torch.tensor([0, 1, 1, 1, 0, 1])
    for mask in (row, row.bool()):
        full = mask.expand(B, T)
        for given in (mask, mask[None]):  # (T,) and (1, T), as position_ids
            assert torch.equal(emb(idx, attention_mask=given), emb(idx, attention_mask=full))
            assert all(torch.equal(a, b) for a, b in zip(rope(q, q, attention_mask=given),
                                                         rope(q, q, attention_mask=full)))
    for name, t in (("attention_mask", row), ("position_ids", torch.arange(T))):
        for bad in (t[:-1], t[None, :-1], t.expand(2, T), t.expand(B, 1, T)):
            with pytest.raises(ValueError, match=f"posemb.torch: {name} has shape "
                                                 rf"\({', '.join(map(str, bad.shape))},?\) but the "
                                                 rf"batch is \({B}, {T}\) \(B, T\)"):
                emb(idx, **{name: bad})


def test_an_empty_batch_of_contiguous_positions_is_checked_against_the_table():
    # (0, T) ids whose positions start .. start + T - 1 pass the table: the SequenceTooLong a
    # (1, T) batch gets from the kernel (the empty batch skipped the check and gave a result)
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    functional = lambda i, start: pt.token_position_embedding(i, emb.wte.weight, emb.wpe.weight,
                                                              start=start)
    for start, length in ((0, MAXT + 1), (MAXT - T + 1, T), (MAXT, 1), (0, 2**40)):
        want = None
        if length <= MAXT + 1:  # a (1, T) batch small enough to build
            with pytest.raises(posemb.SequenceTooLong) as want:
                emb(torch.zeros(1, length, dtype=torch.long), start=start)
        for call in (emb, functional):
            with pytest.raises(posemb.SequenceTooLong, match="embed_forward") as got:
                call(torch.zeros(0, length, dtype=torch.long), start=start)
            assert (got.value.seq_len, got.value.start, got.value.max_seq_len) == (length, start,
                                                                                  MAXT)
            if want is not None:
                assert str(got.value) == str(want.value)
    # within the table: an empty result, as before
    assert emb(torch.zeros(0, MAXT, dtype=torch.long)).shape == (0, MAXT, C)
    assert emb(torch.zeros(0, 1, dtype=torch.long), start=MAXT - 1).shape == (0, 1, C)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("shape", [(0, T), (B, 0), (0, 0)])
def test_empty_batches_give_empty_results_and_zero_gradients(dtype, shape):
    # as nn.Embedding and plain torch do: (B, T, C) with B or T 0, gradients of zeros
    emb = pt.TokenPositionEmbedding(V, MAXT, C).to(dtype)
    idx = torch.zeros(shape, dtype=torch.long)
    ids = torch.zeros(shape, dtype=torch.int32)
    row = torch.zeros(shape[1], dtype=torch.long)
    outs = [emb(idx), emb(idx, start=2), emb(idx, position_ids=ids), emb(idx, position_ids=row),
            emb(idx, attention_mask=ids.bool()), emb(idx, attention_mask=row[None]),
            emb(idx, separator=0)]
    for out in outs:
        assert out.shape == (*shape, C) and out.dtype == dtype
        out.sum().backward()
    for lpe_out, want in ((emb.wpe(ids), (*shape, C)), (emb.wpe(ids.flatten()), (0, C)),
                          (emb.wpe(0), (0, C))):
        assert lpe_out.shape == want and lpe_out.dtype == dtype
        lpe_out.sum().backward()
    for p in (emb.wte.weight, emb.wpe.weight):
        assert p.grad.dtype == dtype and torch.equal(p.grad, torch.zeros_like(p))
    with pytest.raises(ValueError, match="position_ids has shape"):
        emb(idx, position_ids=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="idx must be an int64 or int32 tensor"):
        emb(idx.float())
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    q = torch.zeros(*shape, 2, 4, dtype=dtype, requires_grad=True)
    for kw in (dict(), dict(position_ids=ids), dict(attention_mask=ids), dict(seq_len=8)):
        got = rope(q, q, **kw)
        assert all(t.shape == q.shape and t.dtype == dtype for t in got)
        sum(t.sum() for t in got).backward()
        assert q.grad.shape == q.shape
    with pytest.raises(ValueError, match="heads of D = 6 columns, the config's head_dim is 4"):
        rope(torch.zeros(*shape, 2, 6), torch.zeros(*shape, 2, 6))
