"""posemb.alibi_slopes / alibi_forward / alibi_backward against the ALiBi paper's reference code
(get_slopes, written out below), MPT's gen_slopes, Hugging Face BLOOM's build_alibi_tensor (in
torch, below), a numpy reference of the bias, and torch autograd for the slopes' gradient."""
import math

import numpy as np
import pytest
import torch

import posemb

from conftest import snapshot


def press_get_slopes(n):
    """ofirpress/attention_with_linear_biases, fairseq/models/transformer.py: get_slopes."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + press_get_slopes(2 * closest)[0::2][:n - closest]


def bloom_slopes(num_heads):
    """transformers' BloomModel build_alibi_tensor, its slopes (float32 torch.pow)."""
    closest = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest, dtype=torch.int32))
    if closest != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest) - 3))), dtype=torch.float32)
        remaining = min(closest, num_heads - closest)
        extra = torch.arange(1, 1 + 2 * remaining, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra)], dim=0)
    return slopes.numpy()


def mpt_gen_slopes(n_heads, alibi_bias_max=8):
    """MosaicML llm-foundry's gen_slopes (MPT), in float64: the next power of two's slopes, the
    odd-numbered then the even-numbered ones."""
    n = 2 ** math.ceil(math.log2(n_heads))
    slopes = [1.0 / 2 ** ((i + 1) * alibi_bias_max / n) for i in range(n)]
    if n != n_heads:
        slopes = (slopes[1::2] + slopes[::2])[:n_heads]
    return slopes


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12, 16, 24, 40, 64, 96, 112, 128])
def test_slopes_equal_press_et_al_and_bloom(n):
    got = posemb.alibi_slopes(n)
    assert got.dtype == np.float32 and got.shape == (n,)
    # The reference code in float64 is within a few double ulps of the exact value; posemb's is
    # the float32 nearest to it: within half a float32 ulp (2^-24 relative).
    for reference in (press_get_slopes(n), mpt_gen_slopes(n)):
        want = np.array(reference, dtype=np.float64)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2.0 ** -24 * (1 + 1e-6),
                                   atol=0)
    # BLOOM raises a float32 base (within 2^-24 of its value) to integer powers up to n' = the
    # largest power of two <= n in float32: within (n' + 2) * 2^-24 of the exact value.
    closest = 2 ** math.floor(math.log2(n))
    np.testing.assert_allclose(got, bloom_slopes(n), rtol=(closest + 2) * 2.0 ** -24, atol=0)


def reference_bias(B, H, Tq, Tk, slopes, start, form):
    """The bias in float64: -m |q - j|, -inf after the query in the causal form."""
    q = start + np.arange(Tq)[:, None]
    j = np.arange(Tk)[None, :]
    d = (q - j).astype(np.float64)
    bias = -slopes.astype(np.float64)[:, None, None] * np.abs(d)[None]
    if form == "causal":
        bias = np.where((j > q)[None], -np.inf, bias)
    return np.broadcast_to(bias, (B, H, Tq, Tk))


@pytest.mark.parametrize("form,start,Tq,Tk", [("causal", 0, 6, 6), ("causal", 9, 3, 12),
                                              ("symmetric", 0, 5, 5), ("symmetric", 4, 2, 9)])
def test_forward_equals_the_reference(rng, form, start, Tq, Tk):
    B, H = 2, 12
    s0 = rng.normal(size=(B, H, Tq, Tk)).astype(np.float32)
    s = s0.copy()
    posemb.alibi_forward(s, form=form, start=start)
    bias = reference_bias(B, H, Tq, Tk, posemb.alibi_slopes(H), start, form)
    # The bias is exact in float64 (a float32 slope times a small integer) and rounded once to
    # float32, then added in float32: that is what numpy does here, bit for bit.
    want = np.where(np.isinf(bias), -np.inf, s0 + bias.astype(np.float32))
    np.testing.assert_array_equal(s, want)


def test_causal_attention_equals_bloom_style_alibi_in_torch(rng):
    """BLOOM adds slope * j (no query term) and then masks: the softmax is the same."""
    B, H, T = 2, 12, 10
    s0 = rng.normal(size=(B, H, T, T)).astype(np.float32)
    s = s0.copy()
    posemb.alibi_forward(s)
    p = torch.softmax(torch.from_numpy(s), dim=-1)
    slopes = torch.from_numpy(bloom_slopes(H))
    alibi = slopes[:, None, None] * torch.arange(T, dtype=torch.float32)[None, None, :]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    ref = (torch.from_numpy(s0) + alibi).masked_fill(mask, float("-inf"))
    torch.testing.assert_close(p, torch.softmax(ref, dim=-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", ["causal", "symmetric"])
def test_backward_matches_torch_autograd(rng, form):
    B, H, Tq, Tk, start = 2, 5, 4, 9, 5
    slopes = posemb.alibi_slopes(H)
    w = rng.normal(size=(B, H, Tq, Tk)).astype(np.float32)
    # torch: L = sum(w * (0 + bias(m))) over the unmasked entries, m trainable.
    m = torch.tensor(slopes, dtype=torch.float64, requires_grad=True)
    q = start + torch.arange(Tq)[:, None]
    j = torch.arange(Tk)[None, :]
    keep = (j <= q) if form == "causal" else torch.ones(Tq, Tk, dtype=torch.bool)
    bias = -m[:, None, None] * (q - j).abs().to(torch.float64)[None]
    loss = (torch.from_numpy(w).double() * bias * keep).sum()
    loss.backward()
    g = w.copy()
    d = np.zeros(H, dtype=np.float32)
    posemb.alibi_backward(g, d, form=form, start=start)
    np.testing.assert_allclose(d, m.grad.numpy(), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(g, np.where(keep.numpy()[None, None], w, 0.0))


def test_bad_arguments_raise_and_write_nothing(rng):
    s = rng.normal(size=(1, 3, 4, 4)).astype(np.float32)
    before = snapshot(s)
    with pytest.raises(ValueError, match="form must be 'causal'"):
        posemb.alibi_forward(s, form="bidirectional")
    with pytest.raises(ValueError, match=r"slopes must have shape \(H,\) = \(3,\)"):
        posemb.alibi_forward(s, np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match="slope 1 is nan"):
        posemb.alibi_forward(s, np.array([0.5, np.nan, 0.25], dtype=np.float32))
    with pytest.raises(ValueError, match="4 dimensions"):
        posemb.alibi_forward(s[0])
    with pytest.raises(TypeError, match="float32"):
        posemb.alibi_forward(s.astype(np.float64))
    with pytest.raises(ValueError, match="dslopes must be a contiguous"):
        posemb.alibi_backward(s, np.zeros(2, dtype=np.float32))
    with pytest.raises(ValueError, match="heads is 0"):
        posemb.alibi_slopes(0)
    assert snapshot(s) == before
