"""PyTorch oracle for the fused embedding from 16-bit tables (bfloat16 or float16).

usage: torch_half_embedding.py DIR B T C V MAXT DTYPE
  DTYPE: bf16 or f16
Reads DIR/{tokens.i32, wte.u16, wpe.u16} (the tables' raw 16-bit patterns, row-major (V, C) and
(MAXT, C)); writes DIR/out.f32 = F.embedding(tokens, wte.float()) + wpe.float()[:T], computed in
float32 by torch, positions 0..T-1.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main():
    d, B, T, C, V, maxT, dtype = sys.argv[1:8]
    B, T, C, V, maxT = int(B), int(T), int(C), int(V), int(maxT)
    rd = lambda name, dt, shape: np.fromfile(f"{d}/{name}", dtype=dt).reshape(shape)
    tokens = torch.from_numpy(rd("tokens.i32", np.int32, (B, T)).astype(np.int64))
    tdtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    wte = torch.from_numpy(rd("wte.u16", np.int16, (V, C))).view(tdtype)
    wpe = torch.from_numpy(rd("wpe.u16", np.int16, (maxT, C))).view(tdtype)
    out = F.embedding(tokens, wte.float()) + wpe.float()[:T]
    out.reshape(B * T, C).numpy().astype(np.float32).tofile(f"{d}/out.f32")


if __name__ == "__main__":
    main()
