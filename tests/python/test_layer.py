"""posemb.LearnedPositionalEmbedding (the library's layer) and its initializers from numpy."""
import gc

import numpy as np
import pytest

import posemb
from conftest import reference_backward, reference_positions


def test_table_and_grad_are_views_of_the_layer():
    layer = posemb.LearnedPositionalEmbedding(8, 3, init="normal", stddev=0.5, seed=7)
    table, grad = layer.table, layer.grad
    assert table.shape == grad.shape == (8, 3) and table.flags.writeable
    assert np.shares_memory(table, layer.table) and not grad.any()
    expected = np.zeros((8, 3), np.float32)
    posemb.initialize_table(expected, "normal", 0.5, 7)  # the same seeded draw
    assert table.tobytes() == expected.tobytes()
    rows = layer.forward(2, start=5)
    assert np.shares_memory(rows, table) and not rows.flags.writeable
    table[6, 1] = 42.0
    assert rows[1, 1] == 42.0
    del layer
    gc.collect()
    assert rows[1, 1] == 42.0  # the views keep the layer alive
    with pytest.raises(posemb.SequenceTooLong):
        posemb.LearnedPositionalEmbedding(4, 2).forward(5)


def test_forward_add_backward_add_and_trained_rows(rng):
    layer = posemb.LearnedPositionalEmbedding.from_table(rng.normal(size=(6, 4)).astype(np.float32))
    mask = np.array([[0, 1, 1], [1, 1, 0]], np.bool_)
    src = posemb.PositionSource.padding_mask(mask)
    pos = reference_positions("mask", 2, 3, mask)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    expected = x.copy()
    expected[pos >= 0] += layer.table[pos[pos >= 0]]
    layer.forward_add(x, src)
    assert x.tobytes() == expected.tobytes()
    dx = rng.normal(size=(2, 3, 4)).astype(np.float32)
    layer.backward_add(dx, src)
    ref = np.zeros((6, 4), np.float32)
    reference_backward(None, ref, dx, None, pos)
    assert layer.grad.tobytes() == ref.tobytes()
    layer.zero_grad()
    assert not layer.grad.any()
    assert layer.untrained_rows() == [2, 3, 4, 5] and layer.row_trained(1)
    with pytest.raises(IndexError):
        layer.row_trained(6)


def test_initializers_and_layer_errors():
    t = np.zeros((4, 6), np.float32)
    posemb.initialize_table(t, "sinusoidal")
    np.testing.assert_array_equal(t, posemb.sinusoidal_positional_encoding(4, 6))
    with pytest.raises(ValueError, match="unknown initializer 'gaussian'"):
        posemb.initialize_table(t, "gaussian")
    with pytest.raises(ValueError, match="must both be at least 1"):
        posemb.LearnedPositionalEmbedding(0, 3)
    bad = np.zeros((2, 2), np.float32)
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="row 1, column 0"):
        posemb.LearnedPositionalEmbedding.from_table(bad)


def test_the_memory_budget_refuses_with_the_numbers():
    default = posemb.memory_limit()
    try:
        posemb.set_memory_limit(1 << 20)
        with pytest.raises(posemb.MemoryLimitExceeded) as info:
            posemb.LearnedPositionalEmbedding(1024, 1024)  # 4 MiB
        assert isinstance(info.value, MemoryError) and info.value.limit == 1 << 20
        assert info.value.bytes == 4 << 20 and str(1 << 20) in str(info.value)
    finally:
        posemb.set_memory_limit(0)
    assert posemb.memory_limit() == default
