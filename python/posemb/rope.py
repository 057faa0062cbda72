"""Rotary position embedding (RoPE) of queries and keys (B, T, H, D) float32, in place:
posemb.rope.forward and posemb.rope.backward are posemb.rope_forward and posemb.rope_backward;
posemb.rope.frequencies is posemb.rope_frequencies (a Hugging Face config's inverse frequencies
and attention factor, every rope_scaling type).

    posemb.rope.forward(q, "half", posemb.PositionSource.contiguous(start))   # HF Llama pairs
    posemb.rope.backward(dq, "half", posemb.PositionSource.contiguous(start))
    cfg = json.load(open("Llama-3.1-8B/config.json"))
    inv_freq, attention_factor = posemb.rope.frequencies(cfg)          # llama3 scaling
    posemb.rope.forward(q, "half", config=cfg)                         # rotated with it
"""
from posemb._posemb import rope_angle_precision as angle_precision
from posemb._posemb import rope_backward as backward
from posemb._posemb import rope_forward as forward
from posemb._posemb import rope_frequencies as frequencies

__all__ = ["forward", "backward", "frequencies", "angle_precision"]
