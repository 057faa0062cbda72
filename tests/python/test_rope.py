"""posemb.rope_forward / rope_backward against an independent numpy reference (float64 angles),
both layouts, every kind of positions; the sinusoidal layouts; float16 tables in embed_forward."""
import numpy as np
import pytest

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
