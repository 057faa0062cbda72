"""PyTorch oracle for the optimizers: float32 torch.optim.AdamW / torch.optim.SGD.

usage: torch_optim.py DIR ROWS COLS STEPS adamw LR BETA1 BETA2 EPS WD
       torch_optim.py DIR ROWS COLS STEPS sgd LR MOMENTUM WD
Reads DIR/p0.f32 (ROWS, COLS) and DIR/grads.f32 (STEPS, ROWS, COLS); writes DIR/params.f32
(STEPS, ROWS, COLS): the parameter after each step.
"""
import sys

import numpy as np
import torch


def main():
    d, rows, cols, steps, kind = sys.argv[1:6]
    rows, cols, steps = int(rows), int(cols), int(steps)
    h = [float(x) for x in sys.argv[6:]]
    p = torch.from_numpy(np.fromfile(f"{d}/p0.f32", dtype=np.float32).reshape(rows, cols))
    p = torch.nn.Parameter(p.clone())
    grads = np.fromfile(f"{d}/grads.f32", dtype=np.float32).reshape(steps, rows, cols)
    if kind == "adamw":
        opt = torch.optim.AdamW([p], lr=h[0], betas=(h[1], h[2]), eps=h[3], weight_decay=h[4])
    elif kind == "sgd":
        opt = torch.optim.SGD([p], lr=h[0], momentum=h[1], weight_decay=h[2])
    else:
        raise SystemExit(f"unknown optimizer {kind}")
    out = np.zeros((steps, rows, cols), dtype=np.float32)
    for s in range(steps):
        p.grad = torch.from_numpy(grads[s].copy())
        opt.step()
        out[s] = p.detach().numpy()
    out.tofile(f"{d}/params.f32")


if __name__ == "__main__":
    main()
