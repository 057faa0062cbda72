"""PyTorch oracle for the fused embedding: forward and gradients in float64.

usage: torch_embedding.py DIR B T C V MAXT KIND ARG
  KIND: contiguous (ARG = start), explicit (DIR/ids.i64), mask (DIR/mask.u8),
        packed (ARG = separator token id)
Reads DIR/{tokens.i32, wte.f32, wpe.f32, dout.f32}; writes DIR/{out.f64, dwte.f64, dwpe.f64,
abs_dwte.f64, abs_dwpe.f64} (the abs_* files are the gradients for |dout|, the magnitude that
bounds the float32 summation error). Positions are computed here, independently of posemb.
"""
import sys

import numpy as np
import torch


def main():
    d, B, T, C, V, maxT, kind, arg = sys.argv[1:9]
    B, T, C, V, maxT = int(B), int(T), int(C), int(V), int(maxT)
    rd = lambda name, dt, shape: np.fromfile(f"{d}/{name}", dtype=dt).reshape(shape)
    tokens = torch.from_numpy(rd("tokens.i32", np.int32, (B, T)).astype(np.int64))
    wte = torch.from_numpy(rd("wte.f32", np.float32, (V, C)).astype(np.float64))
    wpe = torch.from_numpy(rd("wpe.f32", np.float32, (maxT, C)).astype(np.float64))
    dout = torch.from_numpy(rd("dout.f32", np.float32, (B * T, C)).astype(np.float64))

    keep = torch.ones(B, T, dtype=torch.float64)
    if kind == "contiguous":
        pos = (int(arg) + torch.arange(T)).expand(B, T)
    elif kind == "explicit":
        pos = torch.from_numpy(rd("ids.i64", np.int64, (B, T)))
    elif kind == "mask":
        mask = torch.from_numpy(rd("mask.u8", np.uint8, (B, T)).astype(np.int64))
        # HF generate: position_ids = cumsum(mask) - 1; pads get no position embedding.
        pos = (torch.cumsum(mask, dim=1) - 1).clamp(min=0)
        keep = mask.to(torch.float64)
    elif kind == "packed":
        sep = int(arg)
        pos = torch.zeros(B, T, dtype=torch.int64)
        for b in range(B):
            nxt = 0
            for t in range(T):
                pos[b, t] = nxt
                nxt = 0 if int(tokens[b, t]) == sep else nxt + 1
    else:
        raise SystemExit(f"unknown kind {kind}")

    def run(grad_out):
        a = wte.clone().requires_grad_(True)
        p = wpe.clone().requires_grad_(True)
        out = torch.nn.functional.embedding(tokens, a) + \
            torch.nn.functional.embedding(pos, p) * keep.unsqueeze(-1)
        out = out.reshape(B * T, C)
        out.backward(grad_out)
        return out.detach(), a.grad, p.grad

    out, dwte, dwpe = run(dout)
    _, abs_dwte, abs_dwpe = run(dout.abs())
    for name, t in [("out", out), ("dwte", dwte), ("dwpe", dwpe), ("abs_dwte", abs_dwte),
                    ("abs_dwpe", abs_dwpe)]:
        t.numpy().astype(np.float64).tofile(f"{d}/{name}.f64")


if __name__ == "__main__":
    main()
