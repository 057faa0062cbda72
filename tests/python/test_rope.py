"""posemb.rope_forward / rope_backward against an independent numpy reference (float64 angles),
both layouts, every kind of positions; the sinusoidal layouts; float16 tables in embed_forward.
Past the trained length: posemb.rope_frequencies, rope_forward(config=...), the angle precision
report and posemb.torch.RotaryEmbedding against numpy / torch reimplementations of transformers'
formulas."""
import json
import math

import numpy as np
import pytest
import torch

import posemb

from conftest import reference_positions, snapshot

B, T, H, D = 2, 7, 3, 8


def reference_rope(x, pos, layout, base=10000.0, rotary_dim=0, inverse=False):
    """x (B, T, H, D) rotated by the angles of pos (B, T) (-1: left as is), in float64."""
    R = rotary_dim or x.shape[-1]
    out = x.astype(np.float64).copy()
    theta = base ** (-2.0 * np.arange(R // 2) / R)
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if pos[b, t] < 0:
                continue
            ang = pos[b, t] * theta * (-1.0 if inverse else 1.0)
            c, s = np.cos(ang), np.sin(ang)
            if layout == "interleaved":
                i, j = np.arange(0, R, 2), np.arange(1, R, 2)
            else:
                i, j = np.arange(R // 2), np.arange(R // 2, R)
            a, bb = out[b, t, :, i].copy(), out[b, t, :, j].copy()
            out[b, t, :, i] = a * c[:, None] - bb * s[:, None]
            out[b, t, :, j] = a * s[:, None] + bb * c[:, None]
    return out


def close(got, want, x):
    # 3e-7 of |a| + |b| per pair, documented; |x| bounds it elementwise here.
    tol = 4e-7 * (2 * np.abs(x).max() + 1e-30)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rope_matches_the_reference_for_every_position_source(rng, layout):
    mask = np.array([[0, 0, 1, 1, 1, 1, 1], [1] * 7])
    ids = rng.integers(0, 50, size=(B, T))
    tokens = rng.integers(0, 5, size=(B, T)).astype(np.int32)
    cases = [(None, reference_positions("contiguous", B, T, 0)),
             (posemb.PositionSource.contiguous(1000), reference_positions("contiguous", B, T, 1000)),
             (posemb.PositionSource.explicit_ids(ids), ids),
             (posemb.PositionSource.padding_mask(mask.astype(np.bool_)),
              reference_positions("mask", B, T, mask)),
             (posemb.PositionSource.packed(tokens, 0),
              reference_positions("packed", B, T, 0, tokens))]
    for src, pos in cases:
        x = rng.normal(size=(B, T, H, D)).astype(np.float32)
        y = x.copy()
        posemb.rope_forward(y, layout, src)
        close(y, reference_rope(x, pos, layout), x)
        # pads are left exactly as they were
        assert (y[pos < 0] == x[pos < 0]).all()
        # the backward is the inverse rotation (the transpose): dL/dx from dL/dy
        g = rng.normal(size=(B, T, H, D)).astype(np.float32)
        dx = g.copy()
        posemb.rope_backward(dx, layout, src)
        close(dx, reference_rope(g, pos, layout, inverse=True), g)


def test_rope_layouts_differ_and_rotary_dim_leaves_the_rest(rng):
    x = rng.normal(size=(1, 4, 2, D)).astype(np.float32)
    a, b = x.copy(), x.copy()
    posemb.rope_forward(a, "interleaved")
    posemb.rope_forward(b, "half")
    assert not np.array_equal(a, b)
    c = x.copy()
    posemb.rope_forward(c, "half", rotary_dim=4, base=500000.0)
    assert (c[..., 4:] == x[..., 4:]).all()
    close(c, reference_rope(x, reference_positions("contiguous", 1, 4, 0), "half",
                            base=500000.0, rotary_dim=4), x)


def test_rope_refuses_bad_input_and_writes_nothing(rng):
    x = rng.normal(size=(B, T, H, D)).astype(np.float32)
    before = snapshot(x)
    with pytest.raises(ValueError, match="layout must be 'interleaved'"):
        posemb.rope_forward(x, "gptj")
    with pytest.raises(ValueError):
        posemb.rope_forward(x[..., :7], "half")  # odd D
    with pytest.raises(ValueError, match="4 dimensions"):
        posemb.rope_forward(x[0], "half")
    with pytest.raises(TypeError):
        posemb.rope_forward(x.astype(np.float64), "half")
    with pytest.raises(IndexError):
        posemb.rope_forward(x, "half", posemb.PositionSource.explicit_ids(-np.ones((B, T), np.int64)))
    assert snapshot(x) == before
    ro = x.copy()
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        posemb.rope_forward(ro, "half")
    # Empty arrays (numpy gives them zero strides) are refused for what they lack, not for
    # their layout.
    for f in (posemb.rope_forward, posemb.rope_backward):
        for shape in ((0, T, H, D), (B, 0, H, D)):
            with pytest.raises(ValueError, match="empty batch"):
                f(np.zeros(shape, np.float32), "half")
        with pytest.raises(ValueError, match="heads is 0"):
            f(np.zeros((B, T, 0, D), np.float32), "half")


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
@pytest.mark.parametrize("frequencies", ["vaswani", "tensor2tensor"])
def test_sinusoidal_layouts_and_frequencies(layout, frequencies):
    d, n = 8, 5
    got = posemb.sinusoidal_positional_encoding(n, d, start=3, layout=layout,
                                                frequencies=frequencies, dtype=np.float64)
    p = np.arange(3, 3 + n)[:, None]
    f = (10000.0 ** (-2.0 * np.arange(d // 2) / d) if frequencies == "vaswani"
         else 10000.0 ** (-np.arange(d // 2) / (d // 2 - 1)))
    s, c = np.sin(p * f), np.cos(p * f)
    want = np.empty((n, d))
    if layout == "interleaved":
        want[:, 0::2], want[:, 1::2] = s, c
    else:
        want[:, : d // 2], want[:, d // 2:] = s, c
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="layout must be"):
        posemb.sinusoidal_positional_encoding(n, d, layout="sideways")


def test_float16_tables_give_the_float32_forward_of_the_widened_tables(rng):
    wte = rng.normal(size=(11, 6)).astype(np.float16)
    wpe = rng.normal(size=(9, 6)).astype(np.float16)
    tokens = rng.integers(0, 11, size=(3, 5)).astype(np.int32)
    got = posemb.embed_forward(tokens, wte, wpe)
    want = posemb.embed_forward(tokens, wte.astype(np.float32), wpe.astype(np.float32))
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()


def test_simd_target_is_reported():
    assert posemb.simd_target() in posemb.simd_targets()


def test_rope_namespace_is_the_same_functions(rng):
    x = rng.normal(size=(1, 3, 2, 4)).astype(np.float32)
    a, b = x.copy(), x.copy()
    posemb.rope.forward(a, "interleaved")
    posemb.rope_forward(b, "interleaved")
    assert a.tobytes() == b.tobytes()
    posemb.rope.backward(a, "interleaved")
    posemb.rope_backward(b, "interleaved")
    assert a.tobytes() == b.tobytes()


# ---- Past the trained length: posemb.rope_frequencies, rope_forward(config=...) and
# posemb.torch.RotaryEmbedding against numpy reimplementations of transformers'
# modeling_rope_utils.py formulas (float64 here, where transformers computes in float32).

def hf_rope(cfg, seq_len=None):
    """(inv_freq, attention_factor) as transformers' ROPE_INIT_FUNCTIONS compute them."""
    base = cfg["rope_theta"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0))
    arange = np.arange(0, dim, 2, dtype=np.float64) / dim
    rs = cfg.get("rope_scaling") or {"rope_type": "default"}
    kind = rs.get("rope_type", rs.get("type"))
    mpe = cfg["max_position_embeddings"]
    if kind == "default":
        return 1.0 / base ** arange, 1.0
    if kind == "linear":
        return 1.0 / base ** arange / rs["factor"], 1.0
    if kind == "dynamic":
        n = max(seq_len or 0, mpe)
        b = base * ((rs["factor"] * n / mpe) - (rs["factor"] - 1)) ** (dim / (dim - 2))
        return 1.0 / b ** arange, 1.0
    if kind == "llama3":
        inv = 1.0 / base ** arange
        f, lo, hi, old = (rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"],
                          rs["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        out = np.where(wavelen > old / lo, inv / f, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / f + smooth * out
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        return np.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        f = rs["factor"]
        old = rs.get("original_max_position_embeddings") or mpe

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0
        af = rs.get("attention_factor")
        if af is None:
            m, m_all = rs.get("mscale"), rs.get("mscale_all_dim")
            af = mscale(f, m) / mscale(f, m_all) if m and m_all else mscale(f)
        fast, slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

        def corr(rot):
            return dim * math.log(old / (rot * 2 * math.pi)) / (2 * math.log(base))
        low, high = corr(fast), corr(slow)
        if rs.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
        extra_factor = 1 - ramp
        pos = base ** arange
        return (1 / (f * pos)) * (1 - extra_factor) + (1 / pos) * extra_factor, af
    if kind == "longrope":
        if "original_max_position_embeddings" in cfg:
            old = cfg["original_max_position_embeddings"]
            f = mpe / old
        else:
            old, f = mpe, rs.get("factor")
        af = rs.get("attention_factor")
        if af is None:
            af = 1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(old))
        ext = np.array(rs["long_factor"] if seq_len and seq_len > old else rs["short_factor"])
        return 1.0 / (ext * base ** arange), af
    raise ValueError(kind)


PHI3 = {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {"type": "longrope", "short_factor": [1 + 0.01 * i for i in range(48)],
                         "long_factor": [1 + 1.5 * i for i in range(48)]}}
CONFIGS = {
    "llama2": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
               "rope_theta": 10000.0, "rope_scaling": None},
    "llama3.1-8b": {"hidden_size": 4096, "num_attention_heads": 32,
                    "max_position_embeddings": 131072, "rope_theta": 500000.0,
                    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192,
                                     "rope_type": "llama3"}},
    "yarn-x4": {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
                "rope_theta": 1e6, "rope_scaling": {"factor": 4.0, "type": "yarn",
                                                    "original_max_position_embeddings": 32768}},
    "yarn-x8-mscale": {"hidden_size": 2048, "num_attention_heads": 16, "head_dim": 64,
                       "max_position_embeddings": 16384, "rope_theta": 10000.0,
                       "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "mscale": 1.0,
                                        "mscale_all_dim": 0.5, "beta_fast": 24,
                                        "original_max_position_embeddings": 2048}},
    "phi3-128k": PHI3,
    "neox-partial-0.25": {"hidden_size": 2048, "num_attention_heads": 16,
                          "partial_rotary_factor": 0.25, "rope_theta": 10000.0,
                          "max_position_embeddings": 2048},
    "gemma-head-dim": {"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256,
                       "rope_theta": 10000.0, "max_position_embeddings": 8192,
                       "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
    "dynamic": {"hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 2048,
                "rope_theta": 10000.0, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seq_len", [None, 4096, 10000])
def test_rope_frequencies_match_transformers_formulas(name, seq_len):
    cfg = CONFIGS[name]
    inv, af = posemb.rope_frequencies(cfg, seq_len)
    want, want_af = hf_rope(cfg, seq_len)
    assert inv.dtype == np.float64 and inv.shape == want.shape
    np.testing.assert_allclose(inv, want, rtol=1e-12, atol=0)
    assert af == pytest.approx(want_af, rel=1e-12)
    # the JSON text is read the same way
    inv2, af2 = posemb.rope.frequencies(json.dumps(cfg), seq_len)
    assert inv2.tobytes() == inv.tobytes() and af2 == af


@pytest.mark.parametrize("name", ["llama3.1-8b", "yarn-x8-mscale", "phi3-128k"])
def test_rope_forward_with_a_config(rng, name):
    cfg = CONFIGS[name]
    inv, af = hf_rope(cfg, 5000)
    D = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    x = rng.normal(size=(1, 3, 2, D)).astype(np.float32)
    y = x.copy()
    posemb.rope_forward(y, "half", posemb.PositionSource.contiguous(4997), config=cfg, seq_len=5000)
    R = 2 * len(inv)
    ang = (4997 + np.arange(3))[:, None] * inv[None, :]
    c, s = np.cos(ang) * af, np.sin(ang) * af
    a, b = x[..., : R // 2].astype(np.float64), x[..., R // 2: R].astype(np.float64)
    want = x.astype(np.float64).copy()
    want[..., : R // 2] = a * c[None, :, None, :] - b * s[None, :, None, :]
    want[..., R // 2: R] = a * s[None, :, None, :] + b * c[None, :, None, :]
    np.testing.assert_allclose(y, want, rtol=0, atol=4e-7 * af * 2 * np.abs(x).max())
    dx = y.copy()
    posemb.rope_backward(dx, "half", posemb.PositionSource.contiguous(4997), config=cfg,
                         seq_len=5000)
    # the transpose of a rotation scaled by af: af^2 times the input back
    np.testing.assert_allclose(dx, x * af * af, rtol=0, atol=2e-6 * af * af * np.abs(x).max())


def test_bad_configs_raise_naming_the_key(rng):
    with pytest.raises(posemb.FileFormatError, match="max_position_embeddings"):
        posemb.rope_frequencies({"hidden_size": 64, "num_attention_heads": 4,
                                 "rope_theta": 10000.0})
    with pytest.warns(UserWarning, match="rope_theta is missing"):
        posemb.rope_frequencies({"hidden_size": 64, "num_attention_heads": 4,
                                 "max_position_embeddings": 8})
    bad = dict(PHI3, rope_scaling=dict(PHI3["rope_scaling"], long_factor=[1.0] * 47))
    with pytest.raises(ValueError, match="rope_scaling.long_factor"):
        posemb.rope_frequencies(bad)
    with pytest.raises(posemb.FileFormatError, match="rope_scaling.rope_type"):
        posemb.rope_frequencies(dict(CONFIGS["llama2"], rope_scaling={"rope_type": "xpos"}))
    with pytest.warns(UserWarning, match="'fancy' is not used by 'linear'"):
        posemb.rope_frequencies(dict(CONFIGS["llama2"],
                                     rope_scaling={"type": "linear", "factor": 2, "fancy": 1}))
    x = rng.normal(size=(1, 2, 1, 64)).astype(np.float32)
    before = snapshot(x)
    with pytest.raises(ValueError, match="head_dim is 128"):
        posemb.rope_forward(x, "half", config=CONFIGS["llama2"])
    with pytest.raises(ValueError, match="not both"):
        posemb.rope_forward(x, "half", base=500000.0, config=CONFIGS["llama2"])
    assert snapshot(x) == before


def test_rope_angle_precision_finds_where_half_precision_breaks():
    cfg = {"hidden_size": 64, "num_attention_heads": 4, "rope_theta": 10000.0,
           "max_position_embeddings": 70000}
    report = posemb.rope_angle_precision(cfg)
    assert set(report) == {"float32", "bfloat16", "float16"}
    assert report["float16"]["first_overflow"] == 65520
    assert report["float32"]["first_overflow"] is None
    assert report["bfloat16"]["first_over"] < 300
    assert report["float32"]["max_error"] < report["bfloat16"]["max_error"]
    assert report["float32"]["by_length"][-1] == (70000, report["float32"]["max_error"])


def torch_reference(q, inv, af, pos):
    """transformers' apply_rotary_pos_emb (rotate_half) on (B, T, H, D), float64."""
    R = 2 * inv.shape[0]
    freqs = pos[..., None].double() * torch.from_numpy(inv)[None, None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = (emb.cos() * af)[:, :, None, :], (emb.sin() * af)[:, :, None, :]
    qr, rest = q[..., :R], q[..., R:]
    half = torch.cat((-qr[..., R // 2:], qr[..., : R // 2]), dim=-1)
    return torch.cat((qr * cos + half * sin, rest), dim=-1)


@pytest.mark.parametrize("name", ["yarn-x4", "neox-partial-0.25", "dynamic"])
def test_torch_rotary_module_matches_transformers_and_its_gradient(rng, name):
    from posemb.torch import RotaryEmbedding
    cfg = dict(CONFIGS[name])
    if name == "yarn-x4":
        cfg.update(hidden_size=256, num_attention_heads=8)  # D = 32: a small test
    rope = RotaryEmbedding(cfg, "half", "BTHD")
    D = cfg["hidden_size"] // cfg["num_attention_heads"]
    B, T, H, start = 2, 5, 3, 2046  # past the dynamic config's 2048
    q = torch.tensor(rng.normal(size=(B, T, H, D)), dtype=torch.float32, requires_grad=True)
    k = torch.tensor(rng.normal(size=(B, T, H, D)), dtype=torch.float32, requires_grad=True)
    qr, kr = rope(q, k, start=start)
    pos = (start + torch.arange(T))[None, :].expand(B, T)
    inv, af = hf_rope(cfg, start + T)  # transformers: seq_len = largest position + 1
    assert rope.attention_scaling == pytest.approx(hf_rope(cfg)[1], rel=1e-12)
    q64 = q.detach().double().requires_grad_()
    want = torch_reference(q64, inv, af, pos)
    tol = 4e-7 * af * 2 * float(q.abs().max())
    torch.testing.assert_close(qr.double(), want.detach(), rtol=0, atol=tol)
    torch.testing.assert_close(kr.double(), torch_reference(k.detach().double(), inv, af, pos),
                               rtol=0, atol=tol)
    w = torch.tensor(rng.normal(size=(B, T, H, D)))
    (qr.double() * w).sum().backward()
    (want * w).sum().backward()
    torch.testing.assert_close(q.grad.double(), q64.grad, rtol=0,
                               atol=4e-7 * af * 2 * float(w.abs().max()))


def test_torch_rotary_module_in_hugging_faces_order(rng):
    """order="BHTD": Hugging Face's (B, H, T, D) q and k (grouped-query: fewer k heads), with
    padding, rotated as transformers rotates them, returned in that order; the same bits as the
    (B, T, H, D) module on the transposed tensors, gradients included."""
    from posemb.torch import RotaryEmbedding
    cfg = {"rope_theta": 10000.0, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "max_position_embeddings": 128}
    B, T, D = 2, 5, 16
    q = torch.tensor(rng.normal(size=(B, 4, T, D)), dtype=torch.float32, requires_grad=True)
    k = torch.tensor(rng.normal(size=(B, 2, T, D)), dtype=torch.float32, requires_grad=True)
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    qr, kr = RotaryEmbedding(cfg, "half", "BHTD")(q, k, attention_mask=mask)
    assert qr.shape == q.shape and kr.shape == k.shape
    q2 = q.detach().transpose(1, 2).requires_grad_()
    k2 = k.detach().transpose(1, 2).requires_grad_()
    qt, kt = RotaryEmbedding(cfg, "half", "BTHD")(q2, k2, attention_mask=mask)
    assert torch.equal(qr, qt.transpose(1, 2)) and torch.equal(kr, kt.transpose(1, 2))
    pos = (mask.cumsum(1) - 1).clamp(min=0)  # a padded token's rotation is not compared
    inv, af = hf_rope(cfg)
    for got, x in ((qr, q), (kr, k)):
        want = torch_reference(x.detach().double().transpose(1, 2), inv, af, pos).transpose(1, 2)
        real = mask.bool()[:, None, :, None].expand_as(got)
        torch.testing.assert_close(got.double()[real], want[real], rtol=0,
                                   atol=4e-7 * 2 * float(x.abs().max()))
    wq, wk = torch.randn(q.shape), torch.randn(k.shape)
    ((qr * wq).sum() + (kr * wk).sum()).backward()
    ((qt * wq.transpose(1, 2)).sum() + (kt * wk.transpose(1, 2)).sum()).backward()
    assert torch.equal(q.grad, q2.grad.transpose(1, 2))
    assert torch.equal(k.grad, k2.grad.transpose(1, 2))


def test_torch_rotary_module_takes_the_positions_the_rotation_takes(rng):
    """Positions up to 2^63 - 2 (the rotation's own limit), given as ids or as start, rotate as
    posemb.rope_forward rotates them; start must be a non-negative integer."""
    from posemb.torch import RotaryEmbedding
    cfg = {"rope_theta": 10000.0, "hidden_size": 64, "num_attention_heads": 2,
           "max_position_embeddings": 128}
    rope = RotaryEmbedding(cfg, "half", "BTHD")
    q = torch.tensor(rng.normal(size=(1, 3, 2, 32)), dtype=torch.float32)
    ids = torch.tensor([[2**62, 7, 2**63 - 2]])
    want = q.numpy().copy()
    posemb.rope_forward(want, "half", posemb.PositionSource.explicit_ids(ids.numpy()), config=cfg)
    qr, _ = rope(q, q, position_ids=ids)
    assert np.array_equal(qr.numpy(), want)
    start = 2**62 + 5
    want = q.numpy().copy()
    posemb.rope_forward(want, "half", posemb.PositionSource.contiguous(start), config=cfg)
    assert np.array_equal(rope(q, q, start=start)[0].numpy(), want)
    with pytest.raises(posemb.SequenceTooLong, match="rope_forward.*below 2\\^63 - 1"):
        rope(q, q, start=2**63 - 3)  # the last position would be 2^63 - 1
    with pytest.raises(ValueError, match=r"posemb\.torch: start must be >= 0.*got -1"):
        rope(q, q, start=-1)
    with pytest.raises(TypeError):
        rope(q, q, start=1.5)
    with pytest.raises(ValueError, match="past every position"):
        rope(q, q, start=2**64)


def test_torch_learned_modules_take_a_non_negative_integer_start():
    from posemb.torch import LearnedPositionalEmbedding, TokenPositionEmbedding
    wpe = LearnedPositionalEmbedding(16, 8)
    both = TokenPositionEmbedding(10, 16, 8)
    idx = torch.zeros(1, 4, dtype=torch.long)
    assert torch.equal(wpe(4, start=3), wpe.weight[3:7])
    assert torch.equal(wpe(4, start=torch.tensor(3)), wpe.weight[3:7])
    for call, op in ((lambda s: wpe(4, start=s), "position_embedding"),
                     (lambda s: both(idx, start=s), "posemb.torch")):
        with pytest.raises(ValueError, match=op + ": start must be >= 0"):
            call(-1)
        with pytest.raises(TypeError):
            call(1.5)
        with pytest.raises(ValueError, match=op + ": start = 18446744073709551616 is past"):
            call(2**64)
