#!/usr/bin/python3
"""PyTorch peer for posemb's embedding benchmarks: GPT-2's input layer (token + position
embedding) forward, backward, and forward + backward, and the position-only add (activations +=
position rows, in place) and its backward, and T5's relative position bias (HF compute_bias: an
embedding lookup of a precomputed (Tq, Tk) bucket matrix, permuted to (H, Tq, Tk) and made
contiguous, as posemb writes it) and its backward, at the shapes posemb measures, with the
protocol of bench/harness/harness.hpp: before every timed call one untimed call and a cache
flush (a buffer of twice the last-level cache, at least 256 MiB, read), the cases interleaved,
the median reported.

usage: /usr/bin/python3 bench/peers/torch_embed.py [--threads 2] [--reps 15]
Prints one JSON document: {"torch": version, "threads": n, "cases": {"embed_forward/gpt2":
seconds, ...}}. The backward accumulates into the existing .grad, as posemb's embed_backward
adds into its gradients.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch

SHAPES = {"gpt2": (4, 1024, 768, 50257), "small": (32, 64, 64, 64)}
# bench/harness/relative_bias_cases.hpp: (H, Tq, Tk, query_start), T5's 32 bidirectional buckets
# up to 128.
RELATIVE_BIAS_SHAPES = {"t5": (12, 512, 512, 0), "t5-1k": (16, 1024, 1024, 0),
                        "t5-step": (12, 1, 4096, 4095)}


def t5_buckets(rel, num_buckets=32, max_distance=128):
    """HF's T5Attention._relative_position_bucket, bidirectional."""
    num_buckets //= 2
    buckets = (rel > 0).to(torch.long) * num_buckets
    n = torch.abs(rel)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) *
                         (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(n < max_exact, n, large)


def relative_bias_runs(g):
    """The relative bias cases: {name: (prepare, timed call)}."""
    runs = {}
    for tag, (H, Tq, Tk, start) in RELATIVE_BIAS_SHAPES.items():
        table = torch.nn.Embedding(32, H)
        torch.nn.init.normal_(table.weight, std=0.02)
        rel = torch.arange(Tk)[None, :] - (torch.arange(Tq)[:, None] + start)
        buckets = t5_buckets(rel)
        dbias = torch.randn(H, Tq, Tk, generator=g)
        out = {}

        def forward(table=table, buckets=buckets):
            with torch.no_grad():
                return table(buckets).permute(2, 0, 1).contiguous()

        def prepare(table=table, buckets=buckets, out=out):
            out["y"] = table(buckets).permute(2, 0, 1).contiguous()

        def backward(out=out, dbias=dbias):
            out["y"].backward(dbias)

        runs[f"relative_bias_forward/{tag}"] = (None, forward)
        runs[f"relative_bias_backward/{tag}"] = (prepare, backward)
    return runs


def flush_buffer():
    try:
        llc = os.sysconf("SC_LEVEL3_CACHE_SIZE")
    except (ValueError, OSError):
        llc = 0
    n = max(256 << 20, 2 * max(llc, 0))
    return np.ones(n // 4, dtype=np.float32)


def flush(buf):
    # One element per 64-byte line brings every line in.
    float(buf[::16].sum())


def time_runs(runs, reps, buf):
    """The median seconds of each of runs ({name: (prepare or None, call)}), interleaved: every
    timed call after one untimed call (and prepare before each) and a cache flush."""
    times = {k: [] for k in runs}
    for _ in range(reps):
        for k, (prep, fn) in runs.items():
            if prep:  # one untimed call first, as the harness does
                prep()
            fn()
            if prep:
                prep()
            flush(buf)
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: sorted(ts)[len(ts) // 2] for k, ts in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    buf = flush_buffer()

    cases = {}
    for tag, (B, T, C, V) in SHAPES.items():
        g = torch.Generator().manual_seed(0)
        wte = torch.nn.Embedding(V, C)
        wpe = torch.nn.Embedding(T, C)
        torch.nn.init.normal_(wte.weight, std=0.02)
        torch.nn.init.normal_(wpe.weight, std=0.01)
        idx = torch.randint(0, V, (B, T), generator=g)
        pos = torch.arange(T).unsqueeze(0)
        dout = torch.randn(B, T, C, generator=g)

        def forward_only():
            with torch.no_grad():
                return wte(idx) + wpe(pos)

        def forward_backward():
            (wte(idx) + wpe(pos)).backward(dout)

        out = {}

        def backward_only():
            out["y"].backward(dout)

        def prepare_backward():
            out["y"] = wte(idx) + wpe(pos)

        x = torch.randn(B, T, C, generator=g)

        def add_forward():
            with torch.no_grad():
                x.add_(wpe(pos))

        def prepare_add_backward():
            out["y"] = x + wpe(pos)  # x needs no gradient: only wpe's

        runs = {f"embed_forward/{tag}": (None, forward_only),
                f"embed_backward/{tag}": (prepare_backward, backward_only),
                f"embed_forward_backward/{tag}": (None, forward_backward),
                f"add_positions_forward/{tag}": (None, add_forward),
                f"add_positions_backward/{tag}": (prepare_add_backward, backward_only)}
        cases.update(time_runs(runs, a.reps, buf))
    cases.update(time_runs(relative_bias_runs(torch.Generator().manual_seed(1)), a.reps, buf))
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "cases": cases}))


if __name__ == "__main__":
    main()
