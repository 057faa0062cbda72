"""Benchmark (not a test): forward + backward through posemb.torch.TokenPositionEmbedding against
PyTorch's own `F.embedding(idx, wte) + wpe[:T]` forward + backward, same weights, same batch,
same thread count, measured interleaved in one process.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/peers/posemb_torch_module.py \
           [--threads 2] [--reps 20] [--B 4 --T 1024 --C 768 --V 50257]

Each iteration starts with the gradients set to None (as optimizer.zero_grad(set_to_none=True)
leaves them) and ends when .grad holds the new gradients. A second pair of figures adds one SGD
update of both tables to the iteration (the whole training step of the layer), because posemb's
token-table gradient is written only where tokens occur and the rest of its memory is touched
for the first time by the optimizer. Prints both medians, the ratios, the thread count and the
load average before and after.
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F

import posemb
from posemb.torch import TokenPositionEmbedding


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--B", type=int, default=4)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--C", type=int, default=768)
    ap.add_argument("--V", type=int, default=50257)
    args = ap.parse_args()
    B, T, C, V = args.B, args.T, args.C, args.V
    torch.set_num_threads(args.threads)  # torch's and posemb's OpenMP (one libgomp)
    load_before = os.getloadavg()

    ours = TokenPositionEmbedding(V, T, C, seed=1)
    wte = torch.nn.Parameter(ours.wte.weight.detach().clone())
    wpe = torch.nn.Parameter(ours.wpe.weight.detach().clone())
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, V, (B, T), generator=g)
    dout = torch.randn(B, T, C, generator=g)

    def posemb_step(sgd):
        ours.wte.weight.grad = ours.wpe.weight.grad = None
        ours(idx).backward(dout)
        if sgd:
            with torch.no_grad():
                for p in (ours.wte.weight, ours.wpe.weight):
                    p.add_(p.grad, alpha=-1e-9)

    def torch_step(sgd):
        wte.grad = wpe.grad = None
        (F.embedding(idx, wte) + wpe[:T]).backward(dout)
        if sgd:
            with torch.no_grad():
                for p in (wte, wpe):
                    p.add_(p.grad, alpha=-1e-9)

    # The two compute the same gradients (float32 sums in possibly another order).
    posemb_step(False)
    torch_step(False)
    for a, b in ((ours.wte.weight.grad, wte.grad), (ours.wpe.weight.grad, wpe.grad)):
        torch.testing.assert_close(a, b, rtol=0, atol=B * 8 * 2**-20)

    times = {(name, sgd): [] for name in ("posemb", "torch") for sgd in (False, True)}
    steps = {"posemb": posemb_step, "torch": torch_step}
    for rep in range(args.reps + 2):
        for sgd in (False, True):
            order = ("posemb", "torch") if rep % 2 == 0 else ("torch", "posemb")
            for name in order:
                t0 = time.perf_counter()
                steps[name](sgd)
                t1 = time.perf_counter()
                if rep >= 2:  # two warm-up rounds
                    times[(name, sgd)].append(t1 - t0)
    load_after = os.getloadavg()

    print(f"posemb {posemb.__version__} torch module vs PyTorch {torch.__version__}: "
          f"B={B} T={T} C={C} V={V}, {torch.get_num_threads()} threads, median of {args.reps}")
    for sgd, what in ((False, "forward + backward"), (True, "forward + backward + SGD step")):
        p, t = median(times[("posemb", sgd)]), median(times[("torch", sgd)])
        print(f"  {what:32s} posemb.torch {p * 1e3:8.2f} ms   PyTorch {t * 1e3:8.2f} ms   "
              f"ratio {t / p:5.2f}x")
    print("  load average before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(
        *load_before, *load_after))


if __name__ == "__main__":
    main()
