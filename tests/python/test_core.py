"""The core operation and the sinusoidal encoding from numpy."""
import gc
import weakref

import numpy as np
import pytest

import posemb
from conftest import snapshot


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lookup_is_a_read_only_view_into_the_table(rng, dtype):
    table = rng.normal(size=(16, 5)).astype(dtype)
    rows = posemb.learned_positional_embedding(4, table, start=3)
    assert rows.dtype == dtype and rows.shape == (4, 5)
    assert np.shares_memory(rows, table)
    assert rows.__array_interface__["data"][0] == table.__array_interface__["data"][0] + \
        3 * table.strides[0]
    assert rows.tobytes() == table[3:7].tobytes()
    assert not rows.flags.writeable
    with pytest.raises(ValueError):
        rows[0, 0] = 1
    table[4, 2] = 7  # the aliasing rule: later writes to the table show through the view
    assert rows[1, 2] == 7


def test_lookup_keeps_the_table_alive(rng):
    table = rng.normal(size=(8, 3)).astype(np.float32)
    expected = table[2:5].copy()
    ref = weakref.ref(table)
    rows = posemb.learned_positional_embedding(3, table, 2)
    del table
    gc.collect()
    assert ref() is not None  # held by the view
    np.testing.assert_array_equal(rows, expected)
    del rows
    gc.collect()
    assert ref() is None  # and released with it


def test_lookup_of_a_strided_table_keeps_the_stride(rng):
    wide = rng.normal(size=(10, 8)).astype(np.float32)
    table = wide[:, :5]  # row stride 8, 5 columns
    rows = posemb.learned_positional_embedding(3, table, 6)
    assert rows.strides == table.strides and np.shares_memory(rows, wide)
    np.testing.assert_array_equal(rows, wide[6:9, :5])


def test_empty_and_full_lookups():
    table = np.zeros((4, 3), np.float32)
    assert posemb.learned_positional_embedding(0, table, 4).shape == (0, 3)
    assert posemb.learned_positional_embedding(4, table).shape == (4, 3)


@pytest.mark.parametrize("seq_len,start", [(5, 0), (1, 4), (2, 3), (0, 5), (2**64 - 1, 2)])
def test_past_the_table_raises_sequence_too_long(seq_len, start):
    table = np.zeros((4, 3), np.float32)
    with pytest.raises(posemb.SequenceTooLong) as info:
        posemb.learned_positional_embedding(seq_len, table, start)
    e = info.value
    assert isinstance(e, IndexError)
    assert (e.seq_len, e.start, e.max_seq_len) == (seq_len, start, 4)
    msg = str(e)
    assert msg.startswith(f"learned_positional_embedding: seq_len = {seq_len} positions starting "
                          f"at start = {start} need rows [{start}, {start + seq_len})")
    assert "max_seq_len = 4 rows" in msg and "resize_table" in msg


def test_lookup_refuses_what_it_cannot_view_without_a_copy():
    with pytest.raises(TypeError, match="float32, float64 or float16"):
        posemb.learned_positional_embedding(1, np.zeros((4, 3), np.int32))
    with pytest.raises(ValueError, match="contiguous rows"):
        posemb.learned_positional_embedding(1, np.zeros((4, 6), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="2 dimensions"):
        posemb.learned_positional_embedding(1, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="strides"):
        posemb.learned_positional_embedding(1, np.zeros((4, 3), np.float32)[::-1])
    with pytest.raises(ValueError, match="seq_len must be >= 0, got -1"):
        posemb.learned_positional_embedding(-1, np.zeros((4, 3), np.float32))


def reference_sinusoidal(seq_len, dim, start, base):
    p = (start + np.arange(seq_len, dtype=np.float64))[:, None]
    i = np.arange(dim) // 2
    angle = p / np.power(base, 2.0 * i / dim)
    return np.where(np.arange(dim) % 2 == 0, np.sin(angle), np.cos(angle))


@pytest.mark.parametrize("dim", [1, 15, 64])
@pytest.mark.parametrize("start", [0, 1000, 10**6])
def test_sinusoidal_matches_the_formula(dim, start):
    ref = reference_sinusoidal(33, dim, start, 10000.0)
    f32 = posemb.sinusoidal_positional_encoding(33, dim, start)
    f64 = posemb.sinusoidal_positional_encoding(33, dim, start, dtype=np.float64)
    assert f32.dtype == np.float32 and f64.dtype == np.float64 and f32.shape == (33, dim)
    # The documented bounds: 3e-7 (float output), 1e-8 (double output). numpy's own angle
    # p / base^(2i/d) carries an error of about p * 2^-53, added to the bound.
    slack = (start + 33) * 2.0**-52
    assert np.max(np.abs(f32 - ref)) <= 3e-7 + slack
    assert np.max(np.abs(f64 - ref)) <= 1e-8 + slack


def test_sinusoidal_into_overwrites_or_leaves_untouched(rng):
    out = rng.normal(size=(5, 8))
    posemb.sinusoidal_positional_encoding_into(out, start=7, base=500.0)
    np.testing.assert_array_equal(
        out, posemb.sinusoidal_positional_encoding(5, 8, 7, 500.0, dtype=np.float64))
    before = snapshot(out)
    with pytest.raises(ValueError, match="base"):
        posemb.sinusoidal_positional_encoding_into(out, base=-1.0)
    with pytest.raises(IndexError):
        posemb.sinusoidal_positional_encoding_into(out, start=2**64 - 2)
    assert snapshot(out) == before
    with pytest.raises(ValueError, match="read-only"):
        ro = out.copy()
        ro.setflags(write=False)
        posemb.sinusoidal_positional_encoding_into(ro)
    with pytest.raises(TypeError, match="float32 or float64"):
        posemb.sinusoidal_positional_encoding(4, 4, dtype=np.int32)
