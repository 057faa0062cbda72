"""Oracle for the sinusoidal layouts: the tables of fairseq, Hugging Face Marian and
tensor2tensor, each written here from that project's own formula (not from posemb's).

usage: sinusoidal_peers.py DIR PEER ROWS DIM START [PEER ROWS DIM START ...]
  PEER: fairseq | marian | tensor2tensor
For case k (from 0), writes DIR/exact_k.f64: positions [START, START + ROWS) of the peer's
formula evaluated in float64 (numpy), and DIR/native_k.f32: the same rows as the peer itself
computes them:
  fairseq        SinusoidalPositionalEmbedding.get_embedding (fairseq/modules/
                 sinusoidal_positional_embedding.py): half_dim = dim // 2,
                 step = log(10000) / (half_dim - 1), freq = exp(arange(half_dim) * -step) in
                 torch float32, cat([sin, cos]), a zero column for an odd dim. Row p of its table
                 is position p (fairseq's positions start at padding_idx + 1); padding_idx is
                 None here, so no row is zeroed.
  marian         MarianSinusoidalPositionalEmbedding._init_weight (transformers/models/marian/
                 modeling_marian.py): position_enc[p, j] = p / 10000^(2 * (j // 2) / dim) in numpy
                 float64; columns [0, ceil(dim/2)) are sin of the even j, the rest cos of the odd
                 j; then torch.FloatTensor (float32).
  tensor2tensor  get_timing_signal_1d (tensor2tensor/layers/common_attention.py), min_timescale
                 1, max_timescale 1e4: num_timescales = dim // 2, increment =
                 log(1e4) / (num_timescales - 1), inv = exp(arange * -increment), concat sin and
                 cos, pad an odd dim with a zero column; evaluated in numpy float64 (TensorFlow is
                 not installed), so native equals exact rounded to float32.
"""
import math
import sys

import numpy as np
import torch


def fairseq(num_embeddings, embedding_dim, dtype):
    half_dim = embedding_dim // 2
    step = math.log(10000) / (half_dim - 1)
    if dtype == "float32":
        freq = torch.exp(torch.arange(half_dim, dtype=torch.float) * -step)
        emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        return emb.numpy()
    freq = np.exp(np.arange(half_dim, dtype=np.float64) * -step)
    emb = np.arange(num_embeddings, dtype=np.float64)[:, None] * freq[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1)
    if embedding_dim % 2 == 1:
        emb = np.concatenate([emb, np.zeros((num_embeddings, 1))], axis=1)
    return emb


def marian(n_pos, dim):
    position_enc = np.array(
        [[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = np.empty((n_pos, dim), dtype=np.float64)
    sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
    out[:, 0:sentinel] = np.sin(position_enc[:, 0::2])
    out[:, sentinel:] = np.cos(position_enc[:, 1::2])
    return out


def tensor2tensor(length, channels, start_index):
    position = np.arange(length, dtype=np.float64) + start_index
    num_timescales = channels // 2
    log_timescale_increment = math.log(1.0e4 / 1.0) / (num_timescales - 1)
    inv_timescales = 1.0 * np.exp(np.arange(num_timescales, dtype=np.float64) *
                                  -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return np.pad(signal, [[0, 0], [0, channels % 2]])


def main():
    d, args = sys.argv[1], sys.argv[2:]
    for k in range(len(args) // 4):
        peer, rows, dim, start = args[4 * k:4 * k + 4]
        rows, dim, start = int(rows), int(dim), int(start)
        if peer == "fairseq":
            exact = fairseq(start + rows, dim, "float64")[start:]
            native = fairseq(start + rows, dim, "float32")[start:]
        elif peer == "marian":
            exact = marian(start + rows, dim)[start:]
            native = torch.FloatTensor(exact).numpy()
        elif peer == "tensor2tensor":
            exact = tensor2tensor(rows, dim, start)
            native = exact.astype(np.float32)
        else:
            raise SystemExit(f"unknown peer {peer}")
        np.ascontiguousarray(exact, dtype=np.float64).tofile(f"{d}/exact_{k}.f64")
        np.ascontiguousarray(native, dtype=np.float32).tofile(f"{d}/native_{k}.f32")


if __name__ == "__main__":
    main()
