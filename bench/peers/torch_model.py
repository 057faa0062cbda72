#!/usr/bin/python3
"""The posemb lab model (lab/model/model.hpp) in PyTorch: the same parameters, names, layout
(linear weights stored (in, out): y = x W + b) and arithmetic, for two uses:

  * the whole-model oracle of tests/test_lab_model_torch.cpp (import TinyGPT, float64), and
  * the training-throughput peer of `posemb bench` (run this file: it trains the bench's model, the
    same shapes and batch, for a fixed number of AdamW steps with gradient clipping on the given
    threads and prints the median seconds per step and tokens per second as JSON): the symbol
    demo's copy task (--task copy, `train_step/demo`) or the text demo's byte-level model
    (--task text, `train_step/text`: 256 byte values, every one of the T positions predicted).

Run with Debian's /usr/bin/python3 (torch 1.13).
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F


def param_shapes(cfg):
    C, V, Fd = cfg["d_model"], cfg["vocab_size"], cfg["d_ff"]
    shapes = [("wte.weight", (V, C))]
    if cfg["pe"] in ("learned", "learned-randomized"):
        shapes.append(("wpe.weight", (cfg["max_seq_len"], C)))
    if cfg["pe"] == "t5-bias":
        shapes.append(("relative_attention_bias.weight", (cfg["num_buckets"], cfg["n_heads"])))
    for l in range(cfg["n_layers"]):
        p = f"blocks.{l}."
        shapes += [(p + "ln1.weight", (1, C)), (p + "ln1.bias", (1, C)),
                   (p + "attn.qkv.weight", (C, 3 * C)), (p + "attn.qkv.bias", (1, 3 * C)),
                   (p + "attn.proj.weight", (C, C)), (p + "attn.proj.bias", (1, C)),
                   (p + "ln2.weight", (1, C)), (p + "ln2.bias", (1, C)),
                   (p + "mlp.fc.weight", (C, Fd)), (p + "mlp.fc.bias", (1, Fd)),
                   (p + "mlp.proj.weight", (Fd, C)), (p + "mlp.proj.bias", (1, C))]
    shapes += [("lnf.weight", (1, C)), ("lnf.bias", (1, C)), ("head.weight", (C, V))]
    return shapes


def sinusoidal(positions, dim, base, dtype):
    # Interleaved: column 2i = sin(p * base^(-2i/d)), 2i+1 = cos(...), evaluated in float64.
    p = positions.to(torch.float64).unsqueeze(-1)
    i = torch.arange(0, dim, 2, dtype=torch.float64)
    ang = p * torch.pow(torch.tensor(base, dtype=torch.float64), -i / dim)
    out = torch.zeros(*positions.shape, dim, dtype=torch.float64)
    out[..., 0::2] = torch.sin(ang)
    out[..., 1::2] = torch.cos(ang)[..., : dim // 2]
    return out.to(dtype)


def rope(x, positions, base):
    # x (B, H, T, hd); pairs (2i, 2i+1) rotate by p * base^(-2i/hd), cos/sin formed in float64
    # then rounded to float32 (as the C++ table is).
    hd = x.shape[-1]
    i = torch.arange(0, hd, 2, dtype=torch.float64)
    ang = positions.to(torch.float64).unsqueeze(-1) * torch.pow(
        torch.tensor(base, dtype=torch.float64), -i / hd)
    cos = torch.cos(ang).to(torch.float32).to(x.dtype).unsqueeze(1)  # (B, 1, T, hd/2)
    sin = torch.sin(ang).to(torch.float32).to(x.dtype).unsqueeze(1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def alibi_bias(heads, T, dtype):
    """ALiBi (Press et al. 2022, the reference code's get_slopes): (H, T, T), slope_h * (j - i)
    for key j of query i (the causal mask removes j > i)."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(heads).is_integer():
        slopes = power_of_2(heads)
    else:
        p = 2 ** math.floor(math.log2(heads))
        slopes = power_of_2(p) + power_of_2(2 * p)[0::2][:heads - p]
    m = torch.tensor(slopes, dtype=torch.float64).view(heads, 1, 1)
    pos = torch.arange(T, dtype=torch.float64)
    return (m * (pos.view(1, T) - pos.view(T, 1))).to(dtype)


def t5_bucket(relative_position, num_buckets, max_distance):
    """Hugging Face T5Attention._relative_position_bucket with bidirectional=False (T5's
    decoder), written as HF writes it: the log-spaced part in float32, truncated toward zero."""
    n = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return torch.where(is_small, n, large)


def t5_bias(table, T, num_buckets, max_distance):
    """HF's compute_bias: (H, T, T), table[bucket(key - query)] for query i, key j."""
    pos = torch.arange(T, dtype=torch.long)
    buckets = t5_bucket(pos.view(1, T) - pos.view(T, 1), num_buckets, max_distance)
    return table[buckets].permute(2, 0, 1)


class TinyGPT(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32):
        super().__init__()
        self.cfg = cfg
        self.names = []
        for name, shape in param_shapes(cfg):
            t = torch.zeros(shape, dtype=dtype)
            if len(shape) == 2 and shape[0] > 1:
                t.normal_(0.0, 0.02)
            if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "lnf.weight":
                t.fill_(1.0)
            self.register_parameter(name.replace(".", "_"), torch.nn.Parameter(t))
            self.names.append(name)

    def p(self, name):
        return getattr(self, name.replace(".", "_"))

    def forward(self, tokens, positions, targets):
        cfg = self.cfg
        B, T = tokens.shape
        C, H = cfg["d_model"], cfg["n_heads"]
        hd = C // H
        x = self.p("wte.weight")[tokens]
        if cfg["pe"] in ("learned", "learned-randomized"):
            x = x + self.p("wpe.weight")[positions]
        elif cfg["pe"] == "sinusoidal":
            x = x + sinusoidal(positions, C, cfg.get("sinusoidal_base", 10000.0), x.dtype)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for l in range(cfg["n_layers"]):
            p = f"blocks.{l}."
            h = F.layer_norm(x, (C,), self.p(p + "ln1.weight")[0], self.p(p + "ln1.bias")[0], 1e-5)
            qkv = h @ self.p(p + "attn.qkv.weight") + self.p(p + "attn.qkv.bias")[0]
            q, k, v = qkv.split(C, dim=-1)
            q = q.view(B, T, H, hd).transpose(1, 2)
            k = k.view(B, T, H, hd).transpose(1, 2)
            v = v.view(B, T, H, hd).transpose(1, 2)
            if cfg["pe"] == "rope":
                q = rope(q, positions, cfg.get("rope_base", 10000.0))
                k = rope(k, positions, cfg.get("rope_base", 10000.0))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            if cfg["pe"] == "alibi":
                att = att + alibi_bias(H, T, att.dtype)
            if cfg["pe"] == "t5-bias":
                att = att + t5_bias(self.p("relative_attention_bias.weight"), T,
                                    cfg["num_buckets"], cfg["max_distance"])
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + y @ self.p(p + "attn.proj.weight") + self.p(p + "attn.proj.bias")[0]
            h = F.layer_norm(x, (C,), self.p(p + "ln2.weight")[0], self.p(p + "ln2.bias")[0], 1e-5)
            h = F.gelu(h @ self.p(p + "mlp.fc.weight") + self.p(p + "mlp.fc.bias")[0],
                       approximate="tanh")
            x = x + h @ self.p(p + "mlp.proj.weight") + self.p(p + "mlp.proj.bias")[0]
        x = F.layer_norm(x, (C,), self.p("lnf.weight")[0], self.p("lnf.bias")[0], 1e-5)
        logits = x @ self.p("head.weight")
        return F.cross_entropy(logits.view(B * T, -1), targets.reshape(-1), ignore_index=-1)


def copy_batch(gen, batch, train_len, alphabet):
    """A copy-task batch in the lab's format (PAD 0, BOS 1, SEP 2, EOS 3, symbols 4..)."""
    T = 2 * train_len + 2
    tokens = torch.zeros(batch, T, dtype=torch.long)
    targets = torch.full((batch, T), -1, dtype=torch.long)
    for b in range(batch):
        n = int(torch.randint(1, train_len + 1, (1,), generator=gen))
        x = torch.randint(4, 4 + alphabet, (n,), generator=gen)
        seq = torch.cat([torch.tensor([1]), x, torch.tensor([2]), x, torch.tensor([3])])
        tokens[b, : 2 * n + 2] = seq[:-1]
        targets[b, n + 1: 2 * n + 2] = seq[n + 2:]
    positions = torch.arange(T).unsqueeze(0).expand(batch, T).contiguous()
    return tokens, positions, targets


def text_batch(gen, batch, T):
    """A byte-level language-model batch in the lab's text format: T input bytes per row, each
    predicting the next, positions 0..T-1. Random bytes: a step's work does not depend on the
    bytes, and the peer needs no corpus."""
    data = torch.randint(0, 256, (batch, T + 1), generator=gen)
    positions = torch.arange(T).unsqueeze(0).expand(batch, T).contiguous()
    return data[:, :T].contiguous(), positions, data[:, 1:].contiguous()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--task", choices=["copy", "text"], default="copy")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--train-len", type=int, default=16)
    ap.add_argument("--alphabet", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=256)
    ap.add_argument("--pe", default="learned")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    text = args.task == "text"
    T = args.train_len if text else 2 * args.train_len + 2
    cfg = {"vocab_size": 256 if text else args.alphabet + 4, "d_model": args.d_model, "n_layers": args.layers,
           "n_heads": args.heads, "d_ff": args.d_ff, "pe": args.pe, "max_seq_len": T}
    model = TinyGPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(1)
    batches = [text_batch(gen, args.batch, T) if text else
               copy_batch(gen, args.batch, args.train_len, args.alphabet) for _ in range(4)]

    def step(i):
        tokens, positions, targets = batches[i % len(batches)]
        opt.zero_grad(set_to_none=False)
        loss = model(tokens, positions, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss)

    for i in range(args.warmup):
        step(i)
    times = []
    for i in range(args.steps):
        t0 = time.perf_counter()
        loss = step(i)
        times.append(time.perf_counter() - t0)
    med = sorted(times)[len(times) // 2]
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": args.threads,
                      "batch": args.batch, "seq_len": T, "steps": args.steps,
                      "step_seconds": med, "tokens_per_second": args.batch * T / med,
                      "last_loss": loss}))


if __name__ == "__main__":
    sys.exit(main())
