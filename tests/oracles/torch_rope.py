"""PyTorch oracle for the rotary position embedding, in float64 with autograd, following the
two implementations in use (written here from their formulas, not from posemb's):

  half         Hugging Face Llama / GPT-NeoX: rotate_half(x) = cat(-x2, x1) of the two halves,
               cos/sin = cat(freqs, freqs), x * cos + rotate_half(x) * sin; GPT-NeoX rotates
               the first rotary_ndims columns of each head and passes the rest.
  interleaved  GPT-J: rotate_every_two(x) = stack(-x[..., 1::2], x[..., ::2]).flatten(-2),
               sin/cos repeat_interleave(2), x * cos + rotate_every_two(x) * sin on the first
               rotary_dim columns of each head.
Both: inv_freq = 1 / base^(arange(0, R, 2) / R).

usage: torch_rope.py DIR N H D R LAYOUT BASE
Reads DIR/x.f32 (N, H*D), DIR/pos.i64 (N), DIR/w.f32 (N, H*D). Writes DIR/y.f64: the rotated x,
and DIR/dx.f64: d(sum(w * y))/dx by autograd.
"""
import sys

import numpy as np
import torch


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def main():
    d, n, h, dim, rot, layout, base = sys.argv[1:8]
    n, h, dim, rot, base = int(n), int(h), int(dim), int(rot), float(base)
    rd = lambda name, dt, shape: np.fromfile(f"{d}/{name}", dtype=dt).reshape(shape)
    x = torch.from_numpy(rd("x.f32", np.float32, (n, h, dim)).astype(np.float64))
    x.requires_grad_(True)
    w = torch.from_numpy(rd("w.f32", np.float32, (n, h, dim)).astype(np.float64))
    pos = torch.from_numpy(rd("pos.i64", np.int64, (n,)))

    inv_freq = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.int64).double() / rot))
    freqs = pos.double()[:, None] * inv_freq[None, :]  # (n, rot/2)
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if layout == "half":
        emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]  # (n, 1, rot)
        y_rot = x_rot * emb.cos() + rotate_half(x_rot) * emb.sin()
    elif layout == "interleaved":
        sin = torch.repeat_interleave(freqs.sin(), 2, dim=-1)[:, None, :]
        cos = torch.repeat_interleave(freqs.cos(), 2, dim=-1)[:, None, :]
        y_rot = x_rot * cos + rotate_every_two(x_rot) * sin
    else:
        raise SystemExit(f"unknown layout {layout}")
    y = torch.cat((y_rot, x_pass), dim=-1)
    (y * w).sum().backward()
    y.detach().numpy().astype(np.float64).tofile(f"{d}/y.f64")
    x.grad.numpy().astype(np.float64).tofile(f"{d}/dx.f64")


if __name__ == "__main__":
    main()
