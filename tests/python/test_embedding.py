"""Positions and the fused token + position embedding on numpy arrays: bit for bit against a
numpy reference for every position source and dtype, and every bad input refused with the
library's message before anything is written."""
import numpy as np
import pytest

import posemb
from conftest import (reference_backward, reference_forward, reference_positions, snapshot)

B, T, C, V, MAXT = 3, 7, 5, 11, 9
SEP = 4


def make(rng, batch=B, seq=T):
    tokens = rng.integers(0, V, size=(batch, seq)).astype(np.int32)
    wte = rng.normal(size=(V, C)).astype(np.float32)
    wpe = rng.normal(size=(MAXT, C)).astype(np.float32)
    dout = rng.normal(size=(batch, seq, C)).astype(np.float32)
    return tokens, wte, wpe, dout


def sources(rng, tokens):
    """(PositionSource, reference positions) for every kind and accepted dtype."""
    ids = rng.integers(0, MAXT, size=(B, T))
    left = np.array([[0, 0, 1, 1, 1, 1, 1], [1] * 7, [0] * 6 + [1]])
    right = left[:, ::-1].copy()
    out = [(posemb.PositionSource.contiguous(0), reference_positions("contiguous", B, T, 0)),
           (posemb.PositionSource.contiguous(2), reference_positions("contiguous", B, T, 2)),
           (posemb.PositionSource.packed(tokens, SEP),
            reference_positions("packed", B, T, SEP, tokens))]
    for dt in (np.int64, np.int32):
        out.append((posemb.PositionSource.explicit_ids(ids.astype(dt)),
                    reference_positions("explicit", B, T, ids)))
    for mask in (left, right):
        for dt in (np.uint8, np.bool_, np.int64, np.int32):
            out.append((posemb.PositionSource.padding_mask(mask.astype(dt)),
                        reference_positions("mask", B, T, mask)))
    return out


def test_resolve_positions_matches_the_reference(rng):
    tokens, *_ = make(rng)
    tokens[0, 2] = tokens[1, 5] = SEP
    for src, ref in sources(rng, tokens):
        got = posemb.resolve_positions(src, B, T, MAXT)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ref, err_msg=repr(src))


@pytest.mark.parametrize("token_dtype", [np.int32, np.int64])
def test_forward_and_backward_bit_for_bit(rng, token_dtype):
    tokens, wte, wpe, dout = make(rng)
    tokens[0, 2] = tokens[1, 5] = SEP
    tokens[2, :] = 3  # a row repeated many times: its sum order matters
    for src, pos in sources(rng, tokens):
        tk = tokens.astype(token_dtype)
        out = posemb.embed_forward(tk, wte, wpe, src)
        assert out.shape == (B, T, C) and out.dtype == np.float32
        assert out.tobytes() == reference_forward(tokens, wte, wpe, pos).tobytes(), repr(src)
        dwte, dwpe = rng.normal(size=(V, C)).astype(np.float32), np.zeros((MAXT, C), np.float32)
        rte, rpe = dwte.copy(), dwpe.copy()
        posemb.embed_backward(dwte, dwpe, dout, tk, src)  # adds into
        reference_backward(rte, rpe, dout, tokens, pos)
        assert dwte.tobytes() == rte.tobytes() and dwpe.tobytes() == rpe.tobytes(), repr(src)


def test_token_only_and_position_only(rng):
    tokens, wte, wpe, dout = make(rng)
    none = np.full((B, T), -1)
    out = np.empty((B, T, C), np.float32)
    assert posemb.embed_forward(tokens, wte, out=out) is out
    assert out.tobytes() == reference_forward(tokens, wte, wpe, none).tobytes()
    dwte = np.zeros((V, C), np.float32)
    posemb.embed_backward(dwte, None, dout, tokens)
    ref = np.zeros_like(dwte)
    reference_backward(ref, None, dout, tokens, none)
    assert dwte.tobytes() == ref.tobytes()

    src = posemb.PositionSource.contiguous(1)
    pos = reference_positions("contiguous", B, T, 1)
    x = rng.normal(size=(B, T, C)).astype(np.float32)
    expected = x + wpe[pos]
    posemb.add_positions_forward(x, wpe, src)
    assert x.tobytes() == expected.tobytes()
    dwpe = np.zeros((MAXT, C), np.float32)
    posemb.add_positions_backward(dwpe, dout, src)
    ref = np.zeros_like(dwpe)
    reference_backward(None, ref, dout, tokens, pos)
    assert dwpe.tobytes() == ref.tobytes()
    # packed positions read the tokens
    packed = posemb.PositionSource.packed(tokens, SEP)
    tokens[1, 3] = SEP  # read when the source is used
    x = np.zeros((B, T, C), np.float32)
    posemb.add_positions_forward(x, wpe, packed)
    np.testing.assert_array_equal(x, wpe[reference_positions("packed", B, T, SEP, tokens)])


def test_outputs_may_have_a_row_stride(rng):
    tokens, wte, wpe, dout = make(rng)
    big = np.zeros((B, T, C + 3), np.float32)
    out = big[:, :, :C]  # rows of stride C + 3
    posemb.embed_forward(tokens, wte, wpe, out=out)
    pos = reference_positions("contiguous", B, T, 0)
    np.testing.assert_array_equal(out, reference_forward(tokens, wte, wpe, pos))
    assert not big[:, :, C:].any()


def bad_calls(rng):
    """(expected exception, message part, call(out, dwte, dwpe) -> None): one bad input each."""
    tokens, wte, wpe, dout = make(rng)
    big = tokens.copy()
    big[2, 5] = V
    neg = tokens.copy()
    neg[1, 1] = -1
    wide = tokens.astype(np.int64)
    wide[0, 3] = 2**40
    ids = np.zeros((B, T), np.int64)
    ids[1, 1] = MAXT + 1
    neg_ids = np.zeros((B, T), np.int64)
    neg_ids[2, 0] = -3
    ctg = posemb.PositionSource.contiguous
    ex = posemb.PositionSource.explicit_ids
    fwd = lambda tk, src=None, **kw: (lambda o, dt, dp: posemb.embed_forward(
        tk, kw.get("wte", wte), kw.get("wpe", wpe), src, out=o))
    bwd = lambda tk, src=None, d=dout: (lambda o, dt, dp: posemb.embed_backward(dt, dp, d, tk, src))
    return [
        (IndexError, "embed_forward: token id 11 at batch row 2, token 5 is outside the "
                     "vocabulary of 11 rows", fwd(big)),
        (IndexError, "embed_backward: token id -1 at batch row 1, token 1", bwd(neg)),
        (IndexError, f"embed_forward: token id {2**40} at batch row 0, token 3 is outside the "
                     "vocabulary of 11 rows", fwd(wide)),
        (posemb.SequenceTooLong, "embed_forward: seq_len = 7 positions starting at start = 5",
         fwd(tokens, ctg(5))),
        (posemb.SequenceTooLong, "batch row 1, token 1, explicit position id 10",
         bwd(tokens, ex(ids))),
        (IndexError, "position id -3 at batch row 2, token 0 is negative",
         fwd(tokens, ex(neg_ids))),
        (ValueError, "position ids has shape (3, 6) but the batch is (3, 7)",
         fwd(tokens, ex(ids[:, :6]))),
        (ValueError, "padding mask value 2 at batch row 0, token 1 is neither 0 (pad) nor 1",
         fwd(tokens, posemb.PositionSource.padding_mask(np.full((B, T), 2, np.uint8) *
                                                        (np.arange(T) == 1)))),
        (ValueError, "embed_forward: empty batch (0, 7)", fwd(tokens[:0])),
        (ValueError, "embed_forward: wpe has shape (9, 4), expected (9, 5)",
         fwd(tokens, wpe=wpe[:, :4].copy())),
        (ValueError, "embed_backward: dout has shape (18, 5), expected (21, 5)",
         bwd(tokens, d=dout[:, :6].copy())),
        (ValueError, "embed_backward: dout has batch shape (7, 3) but the batch is (3, 7)",
         bwd(tokens, d=dout.reshape(T, B, C))),
        (TypeError, "embed_forward: wte must be a float32 array, got float64",
         fwd(tokens, wte=wte.astype(np.float64))),
        (TypeError, "tokens must be an int32 or int64 array, got float32",
         fwd(tokens.astype(np.float32))),
        (ValueError, "embed_forward: positions given without wpe",
         lambda o, dt, dp: posemb.embed_forward(tokens, wte, None, ctg(0), out=o)),
        (ValueError, "add_positions_backward: dx has shape", lambda o, dt, dp:
         posemb.add_positions_backward(dp, dout[:, :, :4].copy(), ctg(0))),
    ]


def test_bad_input_raises_the_library_error_and_writes_nothing(rng):
    out = rng.normal(size=(B, T, C)).astype(np.float32)
    dwte = rng.normal(size=(V, C)).astype(np.float32)
    dwpe = rng.normal(size=(MAXT, C)).astype(np.float32)
    before = snapshot(out, dwte, dwpe)
    for exc, message, call in bad_calls(rng):
        with pytest.raises(exc) as info:
            call(out, dwte, dwpe)
        assert message in str(info.value), (message, str(info.value))
        assert snapshot(out, dwte, dwpe) == before, message


def test_bad_positions_report_the_numbers():
    with pytest.raises(posemb.SequenceTooLong) as info:
        posemb.resolve_positions(posemb.PositionSource.contiguous(3), 2, 8, 10)
    assert (info.value.seq_len, info.value.start, info.value.max_seq_len) == (8, 3, 10)
    bad = posemb.PositionSource.padding_mask(np.array([[1, 1], [7, 1]], np.int64))
    with pytest.raises(ValueError, match="padding mask value 7 at batch row 1, token 0"):
        posemb.resolve_positions(bad, 2, 2, 10)  # checked when used
    with pytest.raises(TypeError, match="mask must be a bool, uint8, int32 or int64"):
        posemb.PositionSource.padding_mask(np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="ids must be an int64 or int32"):
        posemb.PositionSource.explicit_ids(np.ones((2, 2), np.uint8))


def test_read_only_and_non_viewable_outputs_are_refused(rng):
    tokens, wte, wpe, dout = make(rng)
    out = np.zeros((B, T, C), np.float32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="embed_forward: out is read-only"):
        posemb.embed_forward(tokens, wte, wpe, out=out)
    with pytest.raises(ValueError, match="cannot be seen as"):
        swapped = np.zeros((T, B, C), np.float32).transpose(1, 0, 2)
        posemb.embed_forward(tokens, wte, wpe, out=swapped)
    with pytest.raises(ValueError, match="ids has overlapping rows"):
        posemb.PositionSource.explicit_ids(np.broadcast_to(np.arange(T), (B, T)))
    with pytest.raises(ValueError, match="3 dimensions"):
        posemb.embed_forward(tokens, wte, wpe, out=np.zeros((B * T, C), np.float32))


def test_a_position_source_keeps_its_array_alive(rng):
    mask = np.array([[0, 1, 1]], np.bool_)
    src = posemb.PositionSource.padding_mask(mask)
    assert src.kind == "padding_mask" and np.shares_memory(src.array, mask)
    del mask
    np.testing.assert_array_equal(posemb.resolve_positions(src, 1, 3, 4), [[-1, 0, 1]])
    ids32 = np.array([[2, 0]], np.int32)
    referenced = posemb.PositionSource.explicit_ids(ids32)
    assert referenced.array.dtype == np.int32 and np.shares_memory(referenced.array, ids32)
    narrowed = posemb.PositionSource.packed(np.array([[1, 0, 1]], np.int64), 0)
    assert narrowed.array.dtype == np.int32 and not narrowed.array.flags.writeable
    np.testing.assert_array_equal(posemb.resolve_positions(narrowed, 1, 3, 4), [[0, 1, 0]])
    assert repr(posemb.PositionSource.contiguous(5)) == "PositionSource.contiguous(start=5)"
