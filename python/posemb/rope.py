"""Rotary position embedding (RoPE) of queries and keys (B, T, H, D) float32, in place:
posemb.rope.forward and posemb.rope.backward are posemb.rope_forward and posemb.rope_backward.

    posemb.rope.forward(q, "half", posemb.PositionSource.contiguous(start))   # HF Llama pairs
    posemb.rope.backward(dq, "half", posemb.PositionSource.contiguous(start))
"""
from posemb._posemb import rope_backward as backward
from posemb._posemb import rope_forward as forward

__all__ = ["forward", "backward"]
