"""posemb.torch's autograd Functions: posemb's kernels on numpy views of CPU tensors (no copies),
their backwards, and those backwards as Functions of their own for create_graph=True (the ops are
linear: the backward's backward is the forward again). posemb.torch registers them as operators
of torch's dispatcher and calls them."""
import math
import mmap
import warnings

import numpy as np
import torch

from posemb import _posemb as _ext

def _np(t):
    """A numpy view of a CPU tensor: the same memory, no copy. Under torch.jit.trace the views
    are taken inside the autograd Functions, which the trace records as calls (replayed on new
    tensors), so the tracer's warning that the values become constants does not apply."""
    if torch.jit.is_tracing():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            return t.detach().numpy()
    return t.detach().numpy()


def _zeros(shape):
    """A zero float32 tensor for a gradient. From 2 MiB on, memory the OS hands out zeroed when
    first touched (a private anonymous mapping), so the backward makes no pass of its own over a
    gradient of which it writes only the rows in the batch, in transparent huge pages (as
    posemb's own buffers): a 4 KiB page costs a page fault when first touched (about 11 us each
    on a virtual machine measured here: 0.4 s for a GPT-2 token table's gradient), a 2 MiB page
    one fault for 512 times the memory. Smaller gradients come from torch's allocator, whose
    memory is reused from call to call: zeroing it costs less than its page faults would."""
    count = math.prod(shape)
    if not _maps(count):
        return torch.zeros(shape)
    buf = mmap.mmap(-1, count * 4, flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_HUGEPAGE)
        except OSError:  # no transparent huge pages in this kernel: 4 KiB pages
            pass
    return torch.from_numpy(np.frombuffer(buf, dtype=np.float32).reshape(shape))


_HUGE_PAGE_BYTES = 2 << 20


def _maps(count):
    """Whether _zeros gives a gradient of count floats as a lazily zeroed mapping."""
    return count * 4 >= _HUGE_PAGE_BYTES


def _source(kind, tensor, start, separator):
    """The PositionSource of a _plan (it references tensor, which the caller keeps alive)."""
    if kind == "explicit":
        return _ext.PositionSource.explicit_ids(_np(tensor))
    if kind == "mask":
        return _ext.PositionSource.padding_mask(_np(tensor))
    if kind == "packed":
        return _ext.PositionSource.packed(_np(tensor), separator)
    return _ext.PositionSource.contiguous(start)


class _Backward(torch.autograd.Function):
    """The gradients of one of the autograd Functions below (op; state, what its forward saved)
    for dout, as an autograd Function of its own: what autograd records when it differentiates a
    backward (create_graph=True: a gradient penalty, double backward). The Functions are linear
    in their tensors, so their gradients are linear in dout: the backward of the gradients is
    op's forward again, on the gradients' own incoming gradients (op.adjoint), and the tables
    get no second derivative (it is 0)."""

    @staticmethod
    def forward(ctx, op, state, dout):
        ctx.op, ctx.state = op, state
        return op.gradients(state, dout)

    @staticmethod
    def backward(ctx, *grads):
        return None, None, ctx.op.adjoint(ctx.state, *grads)


def _gradients(op, state, dout):
    """op.gradients(state, dout), a tuple of tensors: through _Backward when autograd records the
    backward (create_graph=True), else computed directly."""
    if torch.is_grad_enabled():
        return _Backward.apply(op, state, dout)
    return op.gradients(state, dout)


class _TokenPosition(torch.autograd.Function):
    """out[b, t] = wte[idx[b, t]] + wpe[pos[b, t]] with posemb's embed_forward / embed_backward
    (float32 tables). Arguments are tensors and plain values (a _plan), so torch.jit.trace
    records the call and replays it on new inputs."""

    @staticmethod
    def forward(ctx, wte, wpe, idx, kind, source_tensor, start, separator, given_idx,
                given_positions):
        source = _source(kind, source_tensor, start, separator)
        # float32 tables, or float16 / bfloat16 ones read as they are (widened exactly in the
        # kernel; numpy has no bfloat16, so those go as their bits)
        out = torch.empty((idx.shape[0], idx.shape[1], wte.shape[1]), dtype=torch.float32)
        bits = wte.dtype == torch.bfloat16
        table = (lambda t: _np(t.view(torch.int16))) if bits else _np
        if idx.numel():  # an empty batch (B or T 0): an empty output, as nn.Embedding gives
            _ext.embed_forward(_np(idx), table(wte), table(wpe), source, out=_np(out),
                               bfloat16=bits)
        elif kind == "contiguous" and idx.shape[1]:
            # (0, T): no kernel runs, but positions start .. start + T - 1 must have rows, as
            # for any B (the error a (1, T) batch gets from embed_forward)
            _ext.resolve_positions(source, 1, idx.shape[1], wpe.shape[0],
                                   operation="embed_forward")
        # idx and source_tensor are this call's own copies (token_position_embedding): the
        # backward reads what the forward read. The caller's tensors are saved only so that
        # autograd refuses a backward after they changed in place, as it does for nn.Embedding.
        ctx.save_for_backward(idx, source_tensor, given_idx, given_positions)
        ctx.source, ctx.plan = source, (kind, start, separator)
        ctx.shapes = (wte.shape, wpe.shape)
        return out

    @staticmethod
    def backward(ctx, dout):
        idx, source_tensor, given_idx, given_positions = ctx.saved_tensors
        needs = ctx.needs_input_grad[:2]
        state = (needs, ctx.shapes, ctx.source, idx, source_tensor, ctx.plan, given_idx,
                 given_positions)
        grads = iter(_gradients(_TokenPosition, state, dout))
        return (*(next(grads) if need else None for need in needs), *(None,) * 7)

    @staticmethod
    def gradients(state, dout):
        """(dwte, dwpe), those of the two needed (state: see backward)."""
        (need_wte, need_wpe), shapes, source, idx = state[:4]
        dwte = _zeros(shapes[0]) if need_wte else None
        dwpe = _zeros(shapes[1]) if need_wpe else None
        needed = tuple(g for g in (dwte, dwpe) if g is not None)
        if idx.numel() == 0:  # an empty batch: zero gradients
            return needed
        dout = dout.contiguous()  # itself when contiguous, as autograd usually passes it
        tokens = _np(idx)
        # The kernels add into the gradients: in mapped memory (_zeros), a first read of an
        # untouched page maps the zero page and the write after it faults again. Writing the
        # rows first faults each page once.
        if dwte is not None and _maps(dwte.numel()):
            _ext._zero_rows(_np(dwte), tokens)
        if dwpe is not None and _maps(dwpe.numel()):
            _np(dwpe).fill(0.0)
        if need_wte:
            _ext.embed_backward(_np(dwte), None if dwpe is None else _np(dwpe), _np(dout), tokens,
                                None if dwpe is None else source)
        elif need_wpe:
            _ext.add_positions_backward(_np(dwpe), _np(dout), source)
        return needed

    @staticmethod
    def adjoint(state, *grads):
        """dout's gradient for the gradients' gradients: the forward on them (a zero table for
        one not needed; without a token table, every token reads row 0 of a zero one)."""
        needs, shapes, _, idx, source_tensor, plan, given_idx, given_positions = state
        grads = iter(grads)
        wte = next(grads).contiguous() if needs[0] else None
        wpe = next(grads).contiguous() if needs[1] else torch.zeros(shapes[1])
        if wte is None:
            wte, idx = torch.zeros(1, shapes[0][1]), torch.zeros_like(idx)
        kind, start, separator = plan
        return _TokenPosition.apply(wte, wpe, idx, kind, source_tensor, start, separator,
                                    given_idx, given_positions)


class _Rows(torch.autograd.Function):
    """Rows [start, start + seq_len) of weight: posemb's lookup, a view of the weight itself (any
    of the table dtypes: a view needs no arithmetic). The gradient is computed in float32;
    autograd rounds it to weight's dtype."""

    @staticmethod
    def forward(ctx, weight, seq_len, start):
        # The library checks the range (SequenceTooLong) and gives the view; torch's narrow is
        # the same memory, made so that autograd knows the output is a view of weight. numpy
        # has no bfloat16: the rows' count is what the check reads, so a (rows, 0) stand-in.
        table = (_np(weight) if weight.dtype != torch.bfloat16 else
                 np.empty((weight.shape[0], 0), np.float32))
        _ext.learned_positional_embedding(seq_len, table, start)
        ctx.state = (weight.shape, start, seq_len)
        return weight.narrow(0, start, seq_len)

    @staticmethod
    def backward(ctx, dout):
        return (*_gradients(_Rows, ctx.state, dout), None, None)

    @staticmethod
    def gradients(state, dout):
        shape, start, _ = state
        dweight = _zeros(shape)
        if dout.shape[0] != 0:
            rows = _np(dout.float().contiguous()).reshape(1, *dout.shape)  # (1, seq_len, C)
            _ext.add_positions_backward(_np(dweight), rows, _ext.PositionSource.contiguous(start))
        return (dweight,)

    @staticmethod
    def adjoint(state, grad):
        _, start, seq_len = state
        return grad.narrow(0, start, seq_len)


class _Gather(torch.autograd.Function):
    """out[b, t] = weight[pos[b, t]] for explicit ids (float32 weight; tensors and plain values,
    as _TokenPosition)."""

    @staticmethod
    def forward(ctx, weight, source_tensor, given_positions):
        source = _source("explicit", source_tensor, 0, 0)
        out = torch.zeros((*source_tensor.shape, weight.shape[1]), dtype=weight.dtype)
        if source_tensor.numel():  # an empty batch: an empty output
            _ext.add_positions_forward(_np(out), _np(weight), source)
        ctx.save_for_backward(source_tensor, given_positions)  # the copy; the caller's (see above)
        ctx.source = source
        ctx.shape = weight.shape
        return out

    @staticmethod
    def backward(ctx, dout):
        # (saved_tensors refuses a backward after the caller's positions changed in place)
        return (*_gradients(_Gather, (ctx.shape, ctx.source, *ctx.saved_tensors), dout), None,
                None)

    @staticmethod
    def gradients(state, dout):
        shape, source, source_tensor, _ = state
        dweight = _zeros(shape)
        if source_tensor.numel():
            _ext.add_positions_backward(_np(dweight), _np(dout.contiguous()), source)
        return (dweight,)

    @staticmethod
    def adjoint(state, grad):
        _, _, source_tensor, given_positions = state
        return _Gather.apply(grad.contiguous(), source_tensor, given_positions)


class _Rotate(torch.autograd.Function):
    """x (B, T, H, D) rotated by posemb's rope_forward (a copy); the backward is rope_backward."""

    @staticmethod
    def forward(ctx, x, layout, kind, source_tensor, start, config, seq_len):
        source = _source(kind, source_tensor, start, 0)
        out = x.detach().clone(memory_format=torch.contiguous_format)
        rotated, positions = out, source
        if x.shape[0] * x.shape[1] == 0:  # an empty batch (B or T 0): returned empty, the
            rotated = torch.zeros((1, 1, *x.shape[2:]))  # heads' shape checked on one token
            positions = _ext.PositionSource.contiguous(0)
        with warnings.catch_warnings():  # the config's warnings were given once, by __init__
            warnings.simplefilter("ignore")
            _ext.rope_forward(_np(rotated), layout, positions, config=config, seq_len=seq_len)
        ctx.save_for_backward(source_tensor)  # refuses a backward after the positions changed
        ctx.args = (layout, kind, start, config, seq_len)
        ctx.source = source
        return out

    @staticmethod
    def backward(ctx, dout):
        state = (ctx.args, ctx.source, ctx.saved_tensors[0])
        return (*_gradients(_Rotate, state, dout), *(None,) * 6)

    @staticmethod
    def gradients(state, dout):
        (layout, _, _, config, seq_len), source, _ = state
        dx = dout.detach().clone(memory_format=torch.contiguous_format)
        if dx.shape[0] * dx.shape[1] == 0:  # an empty batch
            return (dx,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _ext.rope_backward(_np(dx), layout, source, config=config, seq_len=seq_len)
        return (dx,)

    @staticmethod
    def adjoint(state, grad):
        (layout, kind, start, config, seq_len), _, source_tensor = state
        return _Rotate.apply(grad, layout, kind, source_tensor, start, config, seq_len)
