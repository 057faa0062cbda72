"""T5's relative position bias in posemb.torch: T5RelativePositionBias (an nn.Module holding the
(num_buckets, num_heads) table) and relative_position_bias (its functional form), forward and
backward through posemb's relative_bias_forward / relative_bias_backward. posemb.torch imports
this file and exports both."""
import operator

import torch
from torch import nn

from posemb import _posemb as _ext
from posemb import _torch_checks as _checks
from posemb._torch_autograd import _gradients, _np
from posemb._torch_dtypes import in_table_dtype as _in_table_dtype
from posemb.torch import _initialize, _operator


def _run(positions):
    """(length, start) of consecutive positions (an int64 tensor start, start + 1, ...)."""
    n = positions.numel()
    return n, int(positions[0]) if n else 0


class _RelativeBias(torch.autograd.Function):
    """bias[h, i, j] = weight[bucket(key_positions[j] - query_positions[i]), h], (H, Tq, Tk),
    from a float32 weight (num_buckets, H); the positions are consecutive (relative_position_bias
    makes them with arange, which torch.jit.trace records: a trace follows its inputs' lengths).
    The gradient is relative_bias_backward's."""

    @staticmethod
    def forward(ctx, weight, query_positions, key_positions, bidirectional, max_distance):
        (tq, qs), (tk, ks) = _run(query_positions), _run(key_positions)
        out = torch.empty((weight.shape[1], tq, tk))
        _ext.relative_bias_forward(_np(weight.contiguous()), tq, tk, bidirectional=bidirectional,
                                   max_distance=max_distance, query_start=qs, key_start=ks,
                                   out=_np(out))
        ctx.state = (tuple(weight.shape), (query_positions, key_positions, bidirectional,
                                           max_distance))
        return out

    @staticmethod
    def backward(ctx, dout):
        return (*_gradients(_RelativeBias, ctx.state, dout), *(None,) * 4)

    @staticmethod
    def gradients(state, dout):
        shape, (query_positions, key_positions, bidirectional, max_distance) = state
        dweight = torch.zeros(shape)
        _ext.relative_bias_backward(_np(dout.float().contiguous()), shape[0],
                                    bidirectional=bidirectional, max_distance=max_distance,
                                    query_start=_run(query_positions)[1],
                                    key_start=_run(key_positions)[1], dtable=_np(dweight))
        return (dweight,)

    @staticmethod
    def adjoint(state, grad):
        """The gradient's own gradient: the forward again, on the table's incoming gradient."""
        return _RelativeBias.apply(grad.float().contiguous(), *state[1])


_relative_bias_op = _operator(
    "relative_bias", "(Tensor weight, Tensor query_positions, Tensor key_positions, "
    "bool bidirectional, int max_distance) -> Tensor", _RelativeBias)


def _length(op, name, value):
    """A length as an int in [0, 2^63), or under torch.jit.trace a traced size (x.shape[2] is a
    0-d tensor there) kept as it is, so that the trace follows its inputs' lengths."""
    if torch.jit.is_tracing() and isinstance(value, torch.Tensor) and value.dim() == 0:
        return value
    return _checks.count(op, name, value, 2**63)


def _flag(op, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def relative_position_bias(weight, query_length, key_length=None, *, bidirectional=True,
                           max_distance=128, query_start=0, key_start=0):
    """T5's relative position bias from a table weight (num_buckets, H): bias[h, i, j] =
    weight[bucket(key - query), h], a (H, Tq, Tk) tensor in weight's dtype, the query i at
    position query_start + i and the key j at key_start + j (key_length None: query_length).
    The functional form of T5RelativePositionBias; differentiable in weight."""
    op = "relative_position_bias"
    _checks.tables(op, weight=weight)
    query_length = _length(op, "query_length", query_length)
    key_length = query_length if key_length is None else _length(op, "key_length", key_length)
    bidirectional = _flag(op, "bidirectional", bidirectional)
    max_distance = _checks.count(op, "max_distance", max_distance, 2**63)
    query_start = _checks.start(op, query_start)
    key_start = _checks.start(op, key_start)
    # The positions as tensors: under torch.jit.trace, aranges of the traced lengths.
    query_positions = torch.arange(query_length) + query_start
    key_positions = torch.arange(key_length) + key_start
    return _in_table_dtype(
        op, lambda w: _relative_bias_op(w, query_positions, key_positions, bidirectional,
                                        max_distance), weight)


class T5RelativePositionBias(nn.Module):
    """T5's learned relative position bias (Raffel et al. 2020; Hugging Face T5Attention's
    relative_attention_bias and compute_bias), on posemb's kernels.

    `weight` (num_buckets, num_heads) holds one learned scalar per bucket of relative distance
    and head (HF's relative_attention_bias.weight, the same layout: copy a checkpoint's tensor
    into it). bidirectional: T5's encoder (keys on both sides, num_buckets // 2 a side); False:
    the decoder's causal bucketing. max_distance: where the log-spaced buckets end; a model trained
    on sequences of L tokens sees no distance of L or more, so buckets past bucket(L - 1) stay as
    initialized: choose max_distance near L.

    forward(query_length, key_length=None, *, query_start=0, key_start=0) -> (1, H, Tq, Tk), the
    bias to add to the attention logits (B, H, Tq, Tk), as HF's compute_bias returns it; query i
    at position query_start + i (cached decoding: the past length), key j at key_start + j.
    key_length None: query_length. The result has weight's dtype; its gradient is summed into
    weight by posemb's deterministic backward.

    The table is initialized by posemb's seeded initializers (init "normal" N(0, stddev) by
    default, "zeros", ...; seed an int in [0, 2^64)). Raises ValueError at construction for a
    bucketing T5's formula cannot compute (num_buckets < 2 causal or < 4 bidirectional,
    max_distance <= max_exact).
    """

    def __init__(self, num_heads, num_buckets=32, max_distance=128, bidirectional=True, *,
                 init="normal", stddev=0.02, seed=0):
        super().__init__()
        op = type(self).__name__
        self.num_heads = _checks.size(op, "num_heads", num_heads)
        self.num_buckets = _checks.size(op, "num_buckets", num_buckets)
        self.max_distance = _checks.size(op, "max_distance", max_distance)
        self.bidirectional = _flag(op, "bidirectional", bidirectional)
        try:  # the bucketing, checked now rather than at the first forward
            _ext.t5_relative_bucket(0, self.bidirectional, self.num_buckets, self.max_distance)
        except ValueError as e:  # "t5_relative_bucket: what is wrong", told as this module's
            raise ValueError(f"{op}: {str(e).partition(': ')[2]}") from None
        self.init, self.stddev = _checks.init(op, init), float(stddev)
        self.seed = _checks.seed(op, seed)
        self.weight = nn.Parameter(torch.empty(self.num_buckets, self.num_heads))
        self.reset_parameters()

    def reset_parameters(self):
        _initialize(self.weight, self.init, self.stddev, self.seed)

    def forward(self, query_length, key_length=None, *, query_start=0, key_start=0):
        bias = relative_position_bias(self.weight, query_length, key_length,
                                      bidirectional=self.bidirectional,
                                      max_distance=self.max_distance, query_start=query_start,
                                      key_start=key_start)
        return bias.unsqueeze(0)

    def buckets(self, relative_position):
        """The bucket of each relative position (key - query): an int for an int, an int64
        tensor for an integer tensor (t5_relative_bucket with this module's bucketing)."""
        if isinstance(relative_position, torch.Tensor):
            out = _ext.t5_relative_bucket(relative_position.detach().cpu().numpy(),
                                          self.bidirectional, self.num_buckets, self.max_distance)
            return torch.from_numpy(out)
        return _ext.t5_relative_bucket(operator.index(relative_position), self.bidirectional,
                                       self.num_buckets, self.max_distance)

    def extra_repr(self):
        return (f"num_heads={self.num_heads}, num_buckets={self.num_buckets}, "
                f"max_distance={self.max_distance}, bidirectional={self.bidirectional}")
