"""Argument checks of posemb.torch: each raises a one-line TypeError (the wrong type) or ValueError
(a value out of range) that names the operation, the argument and the value, before anything
reaches the extension (whose pybind11 would list its whole signature) or torch's dispatcher."""
import operator

import torch

from posemb._torch_dtypes import table_dtype

LAYOUTS = ("half", "interleaved")


def _got(value):
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _integer(op, name, value, what="an int"):
    """value as an int (operator.index: a float or a str is a TypeError, never truncated)."""
    if isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be {what}, got {_got(value)}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be {what}, got {_got(value)}") from None


def tensors(op, **named):
    """Each named argument that is not None must be a dense (strided) CPU torch.Tensor: a sparse
    one (torch.sparse_coo, sparse_csr, ...) or an mkldnn one has no strides to view, and torch
    refused it later with "unsupported memory format", naming neither the argument nor why."""
    for name, t in named.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            kind = "a sparse" if "sparse" in str(t.layout) else "an " + str(t.layout).split(".")[-1]
            raise TypeError(f"{op}: {name} is {kind} tensor ({t.layout}); posemb takes dense "
                            f"tensors: pass {name}.to_dense()")
        if t.device.type != "cpu":
            raise ValueError(f"{op}: tensors must be on the CPU, got {name} on {t.device}")


def tables(op, **named):
    """The one dtype of the tables: CPU tensors of one of posemb.torch's dtypes, each of 2
    dimensions (rows, cols), all with the same number of columns."""
    tensors(op, **named)
    dtype = table_dtype(op, **named)
    for name, t in named.items():
        if t.dim() != 2:
            raise ValueError(f"{op}: {name} must have 2 dimensions (rows, cols), got shape "
                             f"{tuple(t.shape)}")
    # (under torch.jit.trace the sizes are traced values: the kernels compare them)
    if not torch.jit.is_tracing() and len({t.shape[1] for t in named.values()}) > 1:
        raise ValueError(f"{op}: the tables must have one number of columns (embed_dim), got " +
                         ", ".join(f"{n} {tuple(t.shape)}" for n, t in named.items()))
    return dtype


def size(op, name, value):
    """A table's size (max_seq_len, embed_dim, vocab_size): an int in [0, 2^63)."""
    value = _integer(op, name, value)
    if value < 0:
        raise ValueError(f"{op}: {name} must be >= 0, got {value}")
    if value >= 2**63:
        raise ValueError(f"{op}: {name} must be below 2^63 (torch's sizes are int64), got {value}")
    return value


def seed(op, value):
    """A seed of posemb's initializers (a uint64): an int in [0, 2^64)."""
    value = _integer(op, "seed", value)
    if not 0 <= value < 2**64:
        raise ValueError(f"{op}: seed must be in [0, 2^64) (posemb's seeds are uint64), got "
                         f"{value}")
    return value


def init(op, value):
    """An initializer's name (posemb's initialize_table checks which)."""
    if not isinstance(value, str):
        raise TypeError(f"{op}: init must be a str (normal, scaled-normal, glorot-uniform, zeros, "
                        f"sinusoidal), got {_got(value)}")
    return value


def start(op, value):
    """start (the position of the first token of contiguous positions) as a non-negative int."""
    value = _integer(op, "start", value)  # a float is a TypeError, not truncated
    if value < 0:
        raise ValueError(f"{op}: start must be >= 0 (the position of the first token), got {value}")
    if value >= 2**63:  # torch's int is int64; no table or rotation has positions this far
        raise ValueError(f"{op}: start = {value} is past every position (below 2^63 - 1)")
    return value


def count(op, name, value, limit):
    """A count of positions (seq_len) as an int in [0, limit); limit is 2^64 where the library
    takes it (a size_t) and 2^63 where torch's dispatcher does (an int64)."""
    value = _integer(op, name, value)
    if value < 0:
        raise ValueError(f"{op}: {name} must be >= 0, got {value}")
    if value >= limit:
        raise ValueError(f"{op}: {name} must be below 2^{limit.bit_length() - 1}, got {value}")
    return value


def separator(op, value):
    """A separator token id: an int that posemb's TokenId (int32) holds, and not negative (token
    ids are not)."""
    value = _integer(op, "separator", value, "an int (a token id)")
    if not 0 <= value < 2**31:
        raise ValueError(f"{op}: separator must be a token id, 0 <= separator < 2^31 (posemb's "
                         f"token ids are int32), got {value}")
    return value


def layout(op, value):
    """A rotation layout: "half" or "interleaved"."""
    if not isinstance(value, str):
        raise TypeError(f"{op}: layout must be 'half' or 'interleaved', got {_got(value)}")
    if value not in LAYOUTS:
        raise ValueError(f"{op}: layout must be 'half' (pairs (i, i + D/2): HF Llama, GPT-NeoX) "
                         f"or 'interleaved' (pairs (2i, 2i+1): GPT-J, RoFormer), got {value!r}")
    return value
