"""Shared helpers of the Python tests (run by CTest `python`: Debian's pytest, the package from
the build tree on PYTHONPATH)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def snapshot(*arrays):
    """The bytes of every array, to prove that a failed call wrote nothing."""
    return [np.array(a, copy=True).tobytes() for a in arrays]


def reference_positions(kind, B, T, arg=None, tokens=None):
    """Positions computed independently of posemb: (B, T) int64, -1 for pads."""
    if kind == "contiguous":
        return np.broadcast_to(arg + np.arange(T, dtype=np.int64), (B, T)).copy()
    if kind == "explicit":
        return np.asarray(arg, dtype=np.int64)
    if kind == "mask":
        mask = np.asarray(arg).astype(np.int64)
        return np.where(mask == 1, np.cumsum(mask, axis=1) - 1, -1)
    if kind == "packed":
        pos = np.zeros((B, T), dtype=np.int64)
        for b in range(B):
            nxt = 0
            for t in range(T):
                pos[b, t] = nxt
                nxt = 0 if tokens[b, t] == arg else nxt + 1
        return pos
    raise ValueError(kind)


def reference_forward(tokens, wte, wpe, pos):
    """out[b, t] = wte[tok] + wpe[pos] in float32 (pads: the wte row), one IEEE add per element
    as the kernel does: comparable bit for bit."""
    out = wte[tokens].copy()
    real = pos >= 0
    out[real] = out[real] + wpe[pos[real]]
    return out


def reference_backward(dwte, dwpe, dout, tokens, pos):
    """dwte[tok] += dout, dwpe[pos] += dout in ascending (b, t) order, one float32 add at a time
    (np.add.at applies its indices in order): the order the kernels promise, so bit for bit."""
    C = dout.shape[-1]
    flat = dout.reshape(-1, C)
    if dwte is not None:
        np.add.at(dwte, tokens.reshape(-1), flat)
    if dwpe is not None:
        p = pos.reshape(-1)
        np.add.at(dwpe, p[p >= 0], flat[p >= 0])
