"""The GIL is released while a kernel runs. Observed, not timed: every kernel binding goes
through one GIL-free region that counts its calls, and a test gate can hold a kernel inside that
region while another Python thread runs."""
import threading

import numpy as np
import pytest

import posemb
from posemb._posemb import _testing

B, T, C, V, MAXT = 2, 5, 4, 9, 8


def kernel_calls(tmp_path):
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, V, size=(B, T)).astype(np.int32)
    wte = rng.normal(size=(V, C)).astype(np.float32)
    wpe = rng.normal(size=(MAXT, C)).astype(np.float32)
    dout = rng.normal(size=(B, T, C)).astype(np.float32)
    src = posemb.PositionSource.contiguous(1)
    layer = posemb.LearnedPositionalEmbedding(MAXT, C)
    path = str(tmp_path / "t.safetensors")
    table = posemb.PositionTable(wpe)
    return {
        "embed_forward": lambda: posemb.embed_forward(tokens, wte, wpe, src),
        "embed_forward (tokens)": lambda: posemb.embed_forward(tokens, wte),
        "embed_backward": lambda: posemb.embed_backward(np.zeros_like(wte), np.zeros_like(wpe),
                                                        dout, tokens, src),
        "embed_backward (tokens)": lambda: posemb.embed_backward(np.zeros_like(wte), None, dout,
                                                                 tokens),
        "add_positions_forward": lambda: posemb.add_positions_forward(dout.copy(), wpe, src),
        "add_positions_backward": lambda: posemb.add_positions_backward(np.zeros_like(wpe), dout,
                                                                        src),
        "resolve_positions": lambda: posemb.resolve_positions(src, B, T, MAXT),
        "sinusoidal": lambda: posemb.sinusoidal_positional_encoding(T, C),
        "sinusoidal_into": lambda: posemb.sinusoidal_positional_encoding_into(np.zeros((T, C))),
        "initialize_table": lambda: posemb.initialize_table(np.zeros((T, C), np.float32)),
        "layer.forward_add": lambda: layer.forward_add(dout.copy(), src),
        "layer.backward_add": lambda: layer.backward_add(dout, src),
        "save_position_table": lambda: posemb.save_position_table(path, table),
        "load_position_table": lambda: posemb.load_position_table(path),
        "resize_table": lambda: posemb.resize_table(table, MAXT * 2, "copy"),
        "write_safetensors": lambda: posemb.write_safetensors(path, {"w": wpe}),
        "read_safetensors": lambda: posemb.read_safetensors(path),
        "write_npy": lambda: posemb.write_npy(str(tmp_path / "t.npy"), wpe),
        "read_npy": lambda: posemb.read_npy(str(tmp_path / "t.npy")),
    }


def test_every_kernel_runs_without_the_gil(tmp_path):
    calls = kernel_calls(tmp_path)
    for name, call in calls.items():
        without, held = _testing.kernel_counts()
        call()
        after = _testing.kernel_counts()
        assert after == (without + 1, held), name


def test_another_thread_runs_while_a_kernel_is_inside(rng):
    # A kernel on a large array, stopped at the gate inside its GIL-free region: this thread
    # runs Python code meanwhile (impossible if the kernel held the GIL), then lets it go on.
    tokens = rng.integers(0, 50, size=(8, 512)).astype(np.int32)
    wte = rng.normal(size=(50, 256)).astype(np.float32)
    wpe = rng.normal(size=(512, 256)).astype(np.float32)
    result = {}
    _testing.arm_gate()
    worker = threading.Thread(
        target=lambda: result.setdefault("out", posemb.embed_forward(tokens, wte, wpe)))
    worker.start()
    try:
        assert _testing.wait_at_gate(120.0), "the kernel never reached its GIL-free region"
        assert not _testing.arrived_with_gil()
        progress = sum(i * i for i in range(1000))  # Python code, while the kernel is inside
        assert "out" not in result
    finally:
        _testing.open_gate()
        worker.join()
    assert progress == 332833500
    np.testing.assert_array_equal(result["out"], wte[tokens] + wpe[:512])
