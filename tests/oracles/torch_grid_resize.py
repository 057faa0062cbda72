"""PyTorch / numpy oracle for vision position tables resized as 2-D grids, written from the
code users run (not from posemb's):

  interp  timm `resample_abs_pos_embed` / Hugging Face `interpolate_pos_encoding`: the prefix
          rows kept, the grid reshaped to (1, C, H, W), torch.nn.functional.interpolate(size=
          (H2, W2), mode=bicubic|bilinear, align_corners=False) in float32, reshaped back.
  sincos  MAE's get_2d_sincos_pos_embed (numpy float64, then float32), generalised to H x W
          grids as meshgrid(arange(W), arange(H)).

usage: torch_grid_resize.py DIR
Reads DIR/cases.txt, one case a line (torch is imported once for all of them):
  NAME interp ROWS C PREFIX H W H2 W2 MODE   reads DIR/NAME.f32 (ROWS, C); writes
                                              DIR/NAME.out.f32 (PREFIX + H2*W2, C)
  NAME sincos H W D CLS                       writes DIR/NAME.out.f32 (CLS + H*W, D)
"""
import sys

import numpy as np


def interp(d, name, rows, c, prefix, h, w, h2, w2, mode):
    import torch  # only the interp cases pay for it
    import torch.nn.functional as F
    t = torch.from_numpy(np.fromfile(f"{d}/{name}.f32", dtype=np.float32).reshape(1, rows, c))
    pre, grid = t[:, :prefix], t[:, prefix:]
    grid = grid.reshape(1, h, w, c).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(h2, w2), mode=mode, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, h2 * w2, c)
    out = torch.cat([pre, grid], dim=1)
    out.numpy().astype(np.float32).tofile(f"{d}/{name}.out.f32")


def sincos_1d(dim, pos):
    omega = np.arange(dim // 2, dtype=np.float64)
    omega /= dim / 2.0
    omega = 1.0 / 10000 ** omega
    out = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def sincos(d, name, h, w, dim, cls):
    grid_h = np.arange(h, dtype=np.float32)
    grid_w = np.arange(w, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)  # w goes first, as in MAE
    grid = np.stack(grid, axis=0).reshape([2, 1, h, w])
    emb_h = sincos_1d(dim // 2, grid[0])
    emb_w = sincos_1d(dim // 2, grid[1])
    pe = np.concatenate([emb_h, emb_w], axis=1)
    if cls:
        pe = np.concatenate([np.zeros([1, dim]), pe], axis=0)
    pe.astype(np.float32).tofile(f"{d}/{name}.out.f32")


def main():
    d = sys.argv[1]
    for line in open(f"{d}/cases.txt"):
        f = line.split()
        if not f:
            continue
        name, kind = f[0], f[1]
        if kind == "interp":
            interp(d, name, *map(int, f[2:9]), f[9])
        elif kind == "sincos":
            sincos(d, name, *map(int, f[2:6]))
        else:
            raise SystemExit(f"unknown case kind {kind}")


if __name__ == "__main__":
    main()
