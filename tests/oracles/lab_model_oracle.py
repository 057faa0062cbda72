#!/usr/bin/python3
"""Oracle for tests/test_lab_model_torch.cpp: loads the lab model's weights and a batch written
by the C++ test (raw little-endian files described by DIR/case.json), computes the loss and every
parameter gradient with PyTorch in float64 (bench/peers/torch_model.py's TinyGPT), and writes
DIR/loss.txt and DIR/grad.<name>.f64."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench", "peers"))
from torch_model import TinyGPT  # noqa: E402


def main(d):
    case = json.load(open(os.path.join(d, "case.json")))
    cfg = case["config"]
    model = TinyGPT(cfg, dtype=torch.float64)
    with torch.no_grad():
        for name in model.names:
            t = model.p(name)
            raw = np.fromfile(os.path.join(d, "param." + name + ".f32"), dtype="<f4")
            if raw.size != t.numel():
                raise SystemExit(f"{name}: {raw.size} values for shape {tuple(t.shape)}")
            t.copy_(torch.from_numpy(raw.astype(np.float64)).view(t.shape))
    B, T = case["batch"], case["seq_len"]

    def load(name):
        return torch.from_numpy(np.fromfile(os.path.join(d, name), dtype="<i8").reshape(B, T))

    loss = model(load("tokens.i64"), load("positions.i64"), load("targets.i64"))
    loss.backward()
    with open(os.path.join(d, "loss.txt"), "w") as f:
        f.write(repr(float(loss)) + "\n")
    for name in model.names:
        model.p(name).grad.numpy().astype("<f8").tofile(os.path.join(d, "grad." + name + ".f64"))


if __name__ == "__main__":
    main(sys.argv[1])
