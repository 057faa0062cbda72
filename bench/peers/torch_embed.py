"""PyTorch peer for posemb's embedding benchmarks: the fused token + position embedding
(GPT-2's input layer) forward, backward, and forward + backward, at the shapes posemb measures.

usage: /usr/bin/python3 bench/peers/torch_embed.py [--threads 2] [--reps 20]
Prints one JSON document: {"torch": version, "threads": n, "cases": {"forward/gpt2": seconds,
...}} with the median seconds per call. The backward accumulates into the existing .grad, as
posemb's embed_backward adds into its gradients.
"""
import argparse
import json
import time

import torch

SHAPES = {"gpt2": (4, 1024, 768, 50257), "small": (32, 64, 64, 64)}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def measure(tag, B, T, C, V, reps):
    g = torch.Generator().manual_seed(0)
    wte = torch.nn.Embedding(V, C)
    wpe = torch.nn.Embedding(T, C)
    torch.nn.init.normal_(wte.weight, std=0.02)
    torch.nn.init.normal_(wpe.weight, std=0.01)
    idx = torch.randint(0, V, (B, T), generator=g)
    pos = torch.arange(T).unsqueeze(0)
    dout = torch.randn(B, T, C, generator=g)

    def forward():
        return wte(idx) + wpe(pos)

    fwd, bwd, both = [], [], []
    for i in range(reps + 2):
        t0 = time.perf_counter()
        with torch.no_grad():
            forward()
        t1 = time.perf_counter()
        out = forward()
        t2 = time.perf_counter()
        out.backward(dout)
        t3 = time.perf_counter()
        out = forward()
        out.backward(dout)
        t4 = time.perf_counter()
        if i >= 2:
            fwd.append(t1 - t0)
            bwd.append(t3 - t2)
            both.append(t4 - t3)
    return {f"forward/{tag}": median(fwd), f"backward/{tag}": median(bwd),
            f"forward_backward/{tag}": median(both)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cases = {}
    for tag, (B, T, C, V) in SHAPES.items():
        cases.update(measure(tag, B, T, C, V, a.reps))
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "cases": cases}))


if __name__ == "__main__":
    main()
