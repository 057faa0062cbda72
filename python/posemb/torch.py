"""posemb.torch: PyTorch modules on posemb's C++ kernels (CPU; float32 compute).

    import torch
    from posemb.torch import TokenPositionEmbedding

    emb = TokenPositionEmbedding(vocab_size=50257, max_seq_len=1024, embed_dim=768)
    x = emb(idx)                                   # (B, T, C) = wte[idx] + wpe[0:T]
    x = emb(idx, attention_mask=mask)              # left/right padding: pads get no position
    x = emb(idx, position_ids=pos)                 # explicit positions (B, T) or (T,)
    x = emb(idx[:, -1:], start=past_length)        # cached decoding

Rotary embedding from a Hugging Face config (every rope_scaling type; its attention factor in
cos and sin):

    from posemb.torch import RotaryEmbedding
    rope = RotaryEmbedding(json.load(open("config.json")), "half", "BHTD")  # HF Llama's
    q, k = rope(q, k)                            # (B, H, T, D) each, as HF's attention; 0..T-1
    q, k = rope(q, k, start=past_length)                     # cached decoding

`emb.wte` is an nn.Embedding and `emb.wpe` a LearnedPositionalEmbedding, so the state dict holds
`wte.weight` and `wpe.weight` like GPT-2's. Forward and backward run posemb's fused kernels on the
tensors' own memory (numpy views of CPU tensors, no copies of the tables or activations); gradients
are bitwise identical for any thread count, and differentiable again (create_graph=True: a gradient
penalty, double backward). Token ids are int64 (as torch makes them) or int32. The (B, T) ids,
position ids and masks are copied once per forward (small beside the (B, T, C) output): the
backward reads that copy, so ids changed after the forward through idx.numpy() (which torch's
version counter does not see) change neither what the backward computes nor where it writes;
changed in place through torch, autograd refuses the backward.

Dtypes: the modules follow .half(), .bfloat16() and .double(), and autocast leaves them in their
own dtype (as it does nn.Embedding). The kernels compute in float32: float16 and bfloat16 tables
are read as they are and widened exactly (a position table alone with position ids: through a
float32 copy of the table), the result and the gradients rounded once to the tables' dtype; a
float64 table is looked up exactly (as three float32 parts), its gradient computed in float32.
Position ids may have any integer dtype. torch.jit.trace records the modules as operators
(torch.ops.posemb.*): a trace can be saved and loaded where posemb.torch is imported
(torch.jit.script does not compile the modules).
"""
import json
import operator
import warnings

import numpy as np
import torch
from torch import nn

from posemb import _posemb as _ext
from posemb import _torch_checks as _checks
from posemb._torch_autograd import _Gather, _Rotate, _Rows, _TokenPosition, _np, _source
from posemb._torch_dtypes import TABLE_DTYPES as _TABLE_DTYPES
from posemb._torch_dtypes import in_table_dtype as _in_table_dtype

__all__ = ["LearnedPositionalEmbedding", "RotaryEmbedding", "TokenPositionEmbedding",
           "position_embedding", "token_position_embedding"]

_INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _integer_copy(op, name, t):
    """This call's own contiguous copy of an integer tensor t: int32 and int64 kept, every other
    integer dtype widened to int64 (posemb reads int32 and int64 ids)."""
    if t.dtype not in _INT_DTYPES:
        raise TypeError(f"{op}: {name} must be an integer tensor (uint8, int8, int16, int32 or "
                        f"int64), got {t.dtype}")
    if t.dtype in (torch.int32, torch.int64):
        return t.clone(memory_format=torch.contiguous_format)
    return t.to(torch.int64).contiguous()


def _plan(batch, seq_len, position_ids, attention_mask, start, separator, idx=None):
    """Where a (batch, seq_len) batch's positions come from, as tensors and plain values (what
    torch.jit.trace records): (kind, the tensor posemb reads (this call's copy, or None), start,
    separator, the caller's tensor it was copied from (kept for autograd's in-place check, never
    read)); idx (this call's copy of the token ids) for packed positions. (T,) position ids and
    masks are broadcast to batch rows, and (1, T) ones too; batch None leaves (B, T) ids as they
    are. With seq_len, the result must have the batch's shape (B, T)."""
    given = [n for n, v in (("position_ids", position_ids), ("attention_mask", attention_mask),
                            ("separator", separator)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"posemb.torch: pass one of position_ids, attention_mask and separator, "
                         f"got {', '.join(given)}")
    if given and start != 0:
        raise ValueError(f"posemb.torch: start applies to contiguous positions; with {given[0]}, "
                         "positions come from it")
    if position_ids is not None:
        ids = _broadcast("position_ids", position_ids, batch, seq_len)
        ids = _integer_copy("posemb.torch", "position_ids", ids)  # the forward's own copy
        return "explicit", ids, 0, 0, position_ids.detach()
    if attention_mask is not None:
        mask = _broadcast("attention_mask", attention_mask, batch, seq_len)
        if mask.dtype != torch.bool:
            mask = _integer_copy("posemb.torch", "attention_mask", mask)
        else:
            mask = mask.clone(memory_format=torch.contiguous_format)
        return "mask", mask, 0, 0, attention_mask.detach()
    if separator is not None:
        tokens = idx.detach().clone(memory_format=torch.contiguous_format)  # int64: narrowed, checked
        return "packed", tokens, 0, _checks.separator("posemb.torch", separator), None
    return "contiguous", None, _checks.start("posemb.torch", start), 0, None


def _broadcast(name, given, batch, seq_len):
    """The caller's position ids or mask (detached) for a (batch, seq_len) batch: (T,) and (1, T)
    broadcast over the batch (and under torch.jit.trace every (B, T), recorded so that the trace
    follows the batch), checked to be (batch, seq_len) when seq_len is given (the kernels check
    too; an empty batch reaches no kernel)."""
    _checks.tensors("posemb.torch", **{name: given})
    t = given.detach()
    if t.dim() == 1:  # (T,): broadcast over the batch
        t = t.unsqueeze(0).expand(batch, -1)
    elif t.dim() == 2 and batch is not None and (torch.jit.is_tracing() or
                                                (batch != 1 and t.shape[0] == 1)):
        t = t.expand(batch, -1)
    if seq_len is not None and not torch.jit.is_tracing() and tuple(t.shape) != (batch, seq_len):
        raise ValueError(f"posemb.torch: {name} has shape {tuple(given.shape)} but the batch is "
                         f"({batch}, {seq_len}) (B, T)")
    return t


# The autograd Functions as operators of torch's dispatcher (torch.library): torch.jit.trace
# records them by name, so a trace can be saved (torch.jit.save) and loaded again in a process
# that has imported posemb.torch. Autograd runs the Function; below autograd (inference mode) the
# forward alone.
_LIBRARY = torch.library.Library("posemb", "DEF")


def _operator(name, schema, function):
    _LIBRARY.define(name + schema)

    def forward_only(*args):
        with torch.no_grad():
            return function.apply(*args)

    _LIBRARY.impl(name, forward_only, "CPU")
    _LIBRARY.impl(name, function.apply, "Autograd")
    return getattr(torch.ops.posemb, name)


_token_position_op = _operator(
    "token_position", "(Tensor wte, Tensor wpe, Tensor idx, str kind, Tensor? positions, "
    "int start, int separator, Tensor given_idx, Tensor? given_positions) -> Tensor",
    _TokenPosition)
_gather_op = _operator("gather_positions",
                       "(Tensor weight, Tensor positions, Tensor given_positions) -> Tensor",
                       _Gather)


def token_position_embedding(idx, wte, wpe, position_ids=None, attention_mask=None, *, start=0,
                             separator=None):
    """wte[idx] + wpe[positions], (B, T, C), through posemb's fused kernels (the functional form
    of TokenPositionEmbedding; positions as its forward takes them). The result has the tables'
    dtype (float32, float16, bfloat16 or float64; see posemb._torch_dtypes)."""
    op = "token_position_embedding"
    _checks.tensors(op, idx=idx, wte=wte, wpe=wpe)
    _checks.tables(op, wte=wte, wpe=wpe)
    if idx.dim() != 2:
        raise ValueError(f"{op}: idx must be a (B, T) tensor of token ids, got shape "
                         f"{tuple(idx.shape)}")
    if idx.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{op}: idx must be an int64 or int32 tensor of token ids (as "
                        f"nn.Embedding takes them), got {idx.dtype}")
    given = idx.detach()
    idx = given.clone(memory_format=torch.contiguous_format)  # the ids this call reads
    kind, tensor, start, separator, given_positions = _plan(idx.shape[0], idx.shape[1],
                                                            position_ids, attention_mask, start,
                                                            separator, idx)
    compute = lambda a, b: _token_position_op(a, b, idx, kind, tensor, start, separator, given,
                                              given_positions)
    if wte.dtype in (torch.float16, torch.bfloat16):  # read by the kernel as they are: no copy
        return compute(wte, wpe).to(wte.dtype)
    return _in_table_dtype(op, compute, wte, wpe)


def _seq_len(op, positions):
    """positions as a seq_len when it is one (an int, or an integer tensor of no dimensions, which
    torch.jit.trace makes of x.shape[1]), in [0, 2^64) (the library's size_t); None for a tensor
    of position ids."""
    if isinstance(positions, torch.Tensor):
        if positions.dim() != 0:
            return None
        if positions.dtype not in _INT_DTYPES:
            raise TypeError(f"{op}: positions must be an int (seq_len) or an integer tensor of "
                            f"position ids (T,) or (B, T), got a {positions.dtype} scalar tensor")
        return _checks.count(op, "seq_len", int(positions), 2**64)
    try:
        seq_len = operator.index(positions)
    except TypeError:
        raise TypeError(f"{op}: positions must be an int (seq_len) or an integer tensor of "
                        f"position ids (T,) or (B, T), got {type(positions).__name__}") from None
    return _checks.count(op, "seq_len", seq_len, 2**64)


def position_embedding(weight, positions, start=0):
    """weight's rows for positions (the functional form of LearnedPositionalEmbedding):
    an int seq_len gives rows [start, start + seq_len), a view of weight; position_ids
    (T,) or (B, T), of any integer dtype, give weight[position_ids], (T, C) or (B, T, C). The
    result has weight's dtype (float32, float16, bfloat16 or float64)."""
    op = "position_embedding"
    _checks.tables(op, weight=weight)
    start = _checks.start(op, start)
    if torch.jit.is_tracing() and not (isinstance(positions, torch.Tensor) and positions.dim()):
        # A seq_len under torch.jit.trace (x.shape[1] is a 0-d tensor there): the ids start ..
        # start + seq_len - 1 through the gather operator, so that the trace follows the length
        # of its inputs (as nn.Embedding(torch.arange(T)) does) and can be saved.
        if not isinstance(positions, torch.Tensor):
            _seq_len(op, positions)  # the type check
        elif positions.dtype not in _INT_DTYPES:
            _seq_len(op, positions)  # raises, naming the dtype
        positions, start = torch.arange(positions) + start, 0
    seq_len = _seq_len(op, positions)
    if seq_len is not None:
        return _Rows.apply(weight, seq_len, start)
    if start != 0:
        raise ValueError(f"{op}: start applies to a seq_len; position_ids give every position")
    if positions.dim() not in (1, 2):
        raise ValueError(f"{op}: position_ids must be (T,) or (B, T), got shape "
                         f"{tuple(positions.shape)}")
    # (T,) ids as one row; (B, T) ids are the batch (batch None: never broadcast)
    _, tensor, _, _, given = _plan(1 if positions.dim() == 1 else None, None, positions, None, 0,
                                   None)
    out = _in_table_dtype(op, lambda w: _gather_op(w, tensor, given), weight)
    return out[0] if positions.dim() == 1 else out


def _initialize(weight, init, stddev, seed):
    """weight written over by posemb's seeded initializer, which fills float32 tables: another
    dtype (after .half(), .double()) gets the float32 values rounded or widened to it."""
    if weight.dtype == torch.float32 and weight.device.type == "cpu":
        _ext.initialize_table(_np(weight), init, stddev, seed)
        return
    table = torch.empty(tuple(weight.shape))
    _ext.initialize_table(_np(table), init, stddev, seed)
    with torch.no_grad():
        weight.copy_(table)


class LearnedPositionalEmbedding(nn.Module):
    """A learned position table, `weight` (max_seq_len, embed_dim), on posemb's kernels.

    forward(seq_len, start=0): rows [start, start + seq_len), (seq_len, embed_dim), a view of
    weight (no copy); seq_len an int or a 0-d integer tensor. forward(position_ids):
    weight[position_ids], (B, T, embed_dim) for (B, T) ids or (T, embed_dim) for (T,) ids, of any
    integer dtype. The result has weight's dtype (.half(), .bfloat16(), .double(): see the
    module's docstring). Past the table: posemb.SequenceTooLong (an IndexError) naming the rows
    the call needs.
    The table is initialized by posemb's seeded initializers (init: "normal" N(0, stddev),
    "scaled-normal", "glorot-uniform", "zeros", "sinusoidal"), the same on every machine, in
    float32 (reset_parameters after .half() or .double(): those values rounded or widened).
    max_seq_len and embed_dim are ints >= 0, seed an int in [0, 2^64), init a str.
    """

    def __init__(self, max_seq_len, embed_dim, init="normal", stddev=0.02, seed=0):
        super().__init__()
        op = type(self).__name__
        self.max_seq_len = _checks.size(op, "max_seq_len", max_seq_len)
        self.embed_dim = _checks.size(op, "embed_dim", embed_dim)
        self.init, self.stddev = _checks.init(op, init), float(stddev)
        self.seed = _checks.seed(op, seed)
        self.weight = nn.Parameter(torch.empty(self.max_seq_len, self.embed_dim))
        self.reset_parameters()

    def reset_parameters(self):
        _initialize(self.weight, self.init, self.stddev, self.seed)

    def forward(self, positions, start=0):
        return position_embedding(self.weight, positions, start)

    def extra_repr(self):
        return f"{self.max_seq_len}, {self.embed_dim}, init={self.init!r}"


class TokenPositionEmbedding(nn.Module):
    """GPT-2's input layer, token + position embedding, fused: `wte` (an nn.Embedding of
    (vocab_size, embed_dim)) and `wpe` (a LearnedPositionalEmbedding of (max_seq_len,
    embed_dim)).

    forward(idx, position_ids=None, attention_mask=None, *, start=0, separator=None) -> (B, T, C)
      positions: contiguous from `start` by default (cached decoding); position_ids (B, T), or
      (T,) or (1, T) (broadcast over the batch); attention_mask (B, T) (or (T,), (1, T) as
      position_ids), 1 real / 0 pad: a real token's position is the number of real tokens
      before it, pads get the token row only and no position gradient; separator: packed
      documents, positions restarting after each separator token (a token id, an int in
      [0, 2^31)). One of the three at most.

    wte is initialized N(0, stddev) from `seed`, wpe by `init` from (seed + 1) mod 2^64 (posemb's
    seeded initializers; seed an int in [0, 2^64)), and again so by reset_parameters (in
    float32, rounded or widened to the weights' dtype); state dicts use GPT-2's names,
    wte.weight and wpe.weight.
    """

    def __init__(self, vocab_size, max_seq_len, embed_dim, *, init="normal", stddev=0.02, seed=0):
        super().__init__()
        op = type(self).__name__
        vocab_size = _checks.size(op, "vocab_size", vocab_size)
        max_seq_len = _checks.size(op, "max_seq_len", max_seq_len)
        embed_dim = _checks.size(op, "embed_dim", embed_dim)
        init, self.seed = _checks.init(op, init), _checks.seed(op, seed)
        self.stddev = float(stddev)
        self.wte = nn.Embedding(vocab_size, embed_dim, _weight=torch.empty(vocab_size, embed_dim))
        self.wpe = LearnedPositionalEmbedding(max_seq_len, embed_dim, init, stddev,
                                              (self.seed + 1) % 2**64)  # initialized
        self._reset_wte()

    def reset_parameters(self):
        """Both tables written over as the constructor wrote them: wte N(0, stddev) from seed,
        wpe by its init from (seed + 1) mod 2^64 (wpe.reset_parameters)."""
        self._reset_wte()
        self.wpe.reset_parameters()

    def _reset_wte(self):
        _initialize(self.wte.weight, "normal", self.stddev, self.seed)

    def forward(self, idx, position_ids=None, attention_mask=None, *, start=0, separator=None):
        return token_position_embedding(idx, self.wte.weight, self.wpe.weight, position_ids,
                                        attention_mask, start=start, separator=separator)


_rotate_op = _operator("rotate", "(Tensor x, str layout, str kind, Tensor? positions, int start, "
                       "str config, int seq_len) -> Tensor", _Rotate)


class RotaryEmbedding(nn.Module):
    """Rotary position embedding of queries and keys as a Hugging Face config.json describes it:
    rope_theta, head_dim, partial_rotary_factor and rope_scaling (linear, dynamic, yarn, llama3,
    longrope), read by posemb's config reader (posemb.FileFormatError naming the key of a bad
    config; UserWarnings for keys it does not use).

    RotaryEmbedding(config, layout, order)
      config: a dict (json.load of config.json) or its JSON text.
      layout: which columns of a head are rotated together, which a config.json does not say:
        "half" (pairs (i, i + D/2): Hugging Face's Llama, Mistral, Qwen, Phi, GPT-NeoX;
        rotate_half) or "interleaved" (pairs (2i, 2i+1): GPT-J, RoFormer, Meta's Llama code).
      order: the order of q's and k's four dimensions: "BHTD" (batch, heads, tokens, head_dim:
        Hugging Face's attention, q.view(B, T, H, D).transpose(1, 2)) or "BTHD" (batch, tokens,
        heads, head_dim: posemb's kernels, llm.c). Neither has a default: read in the wrong
        order, a (1, 8, 4, 64) q of 8 heads and 4 tokens is 8 tokens of 4 heads, and rotated
        at the wrong positions without any error.

    forward(q, k, position_ids=None, attention_mask=None, *, start=0, seq_len=None) -> (q, k)
      q, k: CPU tensors in `order`, float32, float16, bfloat16 or float64 (rotated in float32,
      returned in their own dtype), with the same batch and tokens (their heads may differ:
      grouped-query attention), returned rotated, in `order` (new tensors; for "BHTD" a
      transposed view of a (B, T, H, D) tensor; gradients flow through posemb's rope_backward).
      Positions as in TokenPositionEmbedding: position_ids and attention_mask are (B, T) or
      (T,). seq_len: the length the frequencies are for (dynamic, longrope), an int in
      [0, 2^63); None does what transformers' dynamic_rope_update does, the largest
      position + 1.

    Attributes: inv_freq (R/2,) float64 and attention_scaling, the frequencies and attention
    factor at the trained length (transformers' names); layout and order as given.
    """

    ORDERS = ("BHTD", "BTHD")

    def __init__(self, config, layout=None, order=None):
        super().__init__()
        if layout is None:
            raise TypeError("RotaryEmbedding: name the rotation layout, which a config.json does "
                            "not give: layout='half' (pairs (i, i + D/2): Hugging Face's Llama, "
                            "Mistral, Qwen, GPT-NeoX) or 'interleaved' (pairs (2i, 2i+1): GPT-J, "
                            "RoFormer, Meta's Llama code)")
        if order is None:
            raise TypeError("RotaryEmbedding: name the order of q's and k's dimensions: "
                            "order='BHTD' (batch, heads, tokens, head_dim: Hugging Face's "
                            "attention) or 'BTHD' (batch, tokens, heads, head_dim: posemb's)")
        if not isinstance(order, str) or order not in self.ORDERS:
            raise ValueError("RotaryEmbedding: order must be 'BHTD' (batch, heads, tokens, "
                             "head_dim: Hugging Face's) or 'BTHD' (batch, tokens, heads, "
                             f"head_dim: posemb's), got {order!r}")
        self.config = config if isinstance(config, str) else json.dumps(config)
        self.layout = _checks.layout("RotaryEmbedding", layout)
        self.order = order
        inv_freq, self.attention_scaling = _ext.rope_frequencies(self.config)
        self.register_buffer("inv_freq", torch.from_numpy(inv_freq), persistent=False)

    def forward(self, q, k, position_ids=None, attention_mask=None, *, start=0, seq_len=None):
        _checks.tensors("RotaryEmbedding", q=q, k=k)
        names = "(B, H, T, D)" if self.order == "BHTD" else "(B, T, H, D)"
        for name, t in (("q", q), ("k", k)):
            if t.dim() != 4:
                raise ValueError(f"RotaryEmbedding: {name} must be a {names} tensor (order "
                                 f"{self.order!r}), got shape {tuple(t.shape)}")
            if t.dtype not in _TABLE_DTYPES:
                raise TypeError(f"RotaryEmbedding: {name} must be a float32, float16, bfloat16 or "
                                f"float64 tensor, got {t.dtype}")
        if self.order == "BHTD":  # rotated as (B, T, H, D) views, returned in the order given
            q_out, k_out = self._rotate(q.transpose(1, 2), k.transpose(1, 2), position_ids,
                                        attention_mask, start, seq_len)
            return q_out.transpose(1, 2), k_out.transpose(1, 2)
        return self._rotate(q, k, position_ids, attention_mask, start, seq_len)

    def _rotate(self, q, k, position_ids, attention_mask, start, seq_len):
        """q and k as (B, T, H, D) tensors (views of the caller's, in self.order)."""
        # (under torch.jit.trace the sizes are traced values: not compared, not made ints, so
        # that the trace follows the inputs' batch and length; the kernels check the shapes)
        tracing = torch.jit.is_tracing()
        if not tracing and q.shape[:2] != k.shape[:2]:
            raise ValueError(f"RotaryEmbedding: q {self._shape(q)} and k {self._shape(k)} differ "
                             f"in B or T; {self._order_hint()}")
        batch, length = q.shape[0], q.shape[1]
        try:
            kind, tensor, start, _, _ = _plan(batch, length, position_ids, attention_mask, start,
                                              None)
        except ValueError as e:
            raise ValueError(f"{e} ({self._order_hint()})") from None
        if seq_len is not None:  # an int64 of torch's dispatcher
            seq_len = _checks.count("RotaryEmbedding", "seq_len", seq_len, 2**63)
        else:
            # Below 2^63 - 1, the positions the rotation takes; past it, the rotation below
            # refuses them with its own message (seq_len then does not matter).
            try:
                pos = (_ext.resolve_positions(_source(kind, tensor, start, 0), int(batch),
                                              int(length), 2**63 - 1)
                       if int(batch) * int(length) else np.empty(0))  # an empty batch: no position
                seq_len = int(pos.max()) + 1 if pos.size else 0
            except _ext.SequenceTooLong:
                seq_len = 0
            if tracing:
                warnings.warn(f"RotaryEmbedding: under torch.jit.trace, seq_len=None is fixed at "
                              f"the traced inputs' largest position + 1 ({seq_len}); pass seq_len "
                              "for dynamic or longrope scaling", torch.jit.TracerWarning)
        # In float32 (posemb's kernels), returned in q's and k's dtypes: float16 and bfloat16
        # widened exactly, float64 rounded to float32 (the rotation is float32-accurate).
        return tuple(_rotate_op(t.float(), self.layout, kind, tensor, start, self.config,
                                seq_len).to(t.dtype) for t in (q, k))

    def _order_hint(self):
        """Where B and T are in self.order, and the other order."""
        if self.order == "BHTD":
            return ("the module's order 'BHTD' reads q and k as (batch, heads, tokens, head_dim), "
                    "B = shape[0], T = shape[2]; for (batch, tokens, heads, head_dim) tensors "
                    "make it with order='BTHD'")
        return ("the module's order 'BTHD' reads q and k as (batch, tokens, heads, head_dim), "
                "B = shape[0], T = shape[1]; for Hugging Face's (batch, heads, tokens, head_dim) "
                "make it with order='BHTD'")

    def _shape(self, t):
        """t's shape as the caller gave it (t is the (B, T, H, D) view)."""
        return tuple(t.transpose(1, 2).shape) if self.order == "BHTD" else tuple(t.shape)

    def extra_repr(self):
        return (f"rotary_dim={2 * self.inv_freq.shape[0]}, layout={self.layout!r}, "
                f"order={self.order!r}")


# T5's relative position bias (python/posemb/_torch_relative_bias.py, which registers its
# operator when imported here). Its names are looked up on use, so that either module may be
# imported first (it imports this one).
from posemb import _torch_relative_bias as _relative_bias  # noqa: E402

__all__ += ["T5RelativePositionBias", "relative_position_bias"]


def __getattr__(name):
    if name in ("T5RelativePositionBias", "relative_position_bias"):
        return getattr(_relative_bias, name)
    raise AttributeError(f"module 'posemb.torch' has no attribute {name!r}")
