"""posemb.torch's argument errors: a TypeError or ValueError of one line naming the operation, the
argument and the value, never pybind11's "incompatible function arguments" listing, torch's
dispatcher's RuntimeError or an AttributeError from inside the package."""
import numpy as np
import pytest
import torch

import posemb.torch as pt

V, MAXT, C = 7, 8, 4
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def one_line(info):
    msg = str(info.value)
    assert "\n" not in msg and "incompatible function arguments" not in msg, msg
    return msg


def test_tensor_arguments_of_another_type_are_type_errors_naming_them():
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.zeros(1, 3, dtype=torch.long)
    for bad in ([[1, 2]], np.zeros((1, 3), np.int64), (1, 2)):
        with pytest.raises(TypeError, match="token_position_embedding: idx must be a "
                                            f"torch.Tensor, got {type(bad).__name__}") as info:
            emb(bad)
        one_line(info)
    for name in ("position_ids", "attention_mask"):
        with pytest.raises(TypeError, match=f"posemb.torch: {name} must be a torch.Tensor, "
                                            "got list"):
            emb(idx, **{name: [[0, 1, 2]]})
    with pytest.raises(TypeError, match="token_position_embedding: wpe must be a torch.Tensor, "
                                        "got ndarray"):
        pt.token_position_embedding(idx, emb.wte.weight, emb.wpe.weight.detach().numpy())
    with pytest.raises(TypeError, match="position_embedding: weight must be a torch.Tensor, "
                                        "got list"):
        pt.position_embedding([[1.0, 2.0]], 1)
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    q = torch.zeros(1, 3, 2, 4)
    with pytest.raises(TypeError, match="RotaryEmbedding: k must be a torch.Tensor, got ndarray"):
        rope(q, q.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_tables_must_have_two_dimensions_in_every_dtype(dtype):
    idx = torch.zeros(1, 3, dtype=torch.long)
    flat = torch.randn(6).to(dtype)
    table = torch.randn(6, C).to(dtype)
    for positions in (2, torch.tensor([1]), torch.tensor([[0, 1]])):
        with pytest.raises(ValueError, match=r"position_embedding: weight must have 2 dimensions "
                                             r"\(rows, cols\), got shape \(6,\)"):
            pt.position_embedding(flat, positions)
        with pytest.raises(ValueError, match=r"got shape \(2, 3, 4\)"):
            pt.position_embedding(torch.zeros(2, 3, 4, dtype=dtype), positions)
    for wte, wpe, name in ((flat, table, "wte"), (table, flat, "wpe"), (flat, flat, "wte")):
        with pytest.raises(ValueError, match=f"token_position_embedding: {name} must have 2 "
                                             r"dimensions \(rows, cols\), got shape \(6,\)"):
            pt.token_position_embedding(idx, wte, wpe)
    with pytest.raises(ValueError, match=r"one number of columns \(embed_dim\), got wte "
                                         r"\(6, 4\), wpe \(6, 5\)"):
        pt.token_position_embedding(idx, table, torch.randn(6, 5).to(dtype))


def test_seeds_sizes_and_init_of_the_modules():
    # wpe's seed is (seed + 1) mod 2^64: the largest seed works and seeds wpe with 0
    emb = pt.TokenPositionEmbedding(V, MAXT, C, seed=2**64 - 1)
    assert emb.seed == 2**64 - 1 and emb.wpe.seed == 0
    assert torch.equal(emb.wpe.weight, pt.LearnedPositionalEmbedding(MAXT, C, seed=0).weight)
    assert torch.equal(pt.TokenPositionEmbedding(V, MAXT, C, seed=4).wpe.weight,
                       pt.LearnedPositionalEmbedding(MAXT, C, seed=5).weight)
    assert pt.LearnedPositionalEmbedding(MAXT, C, seed=2**64 - 1).seed == 2**64 - 1
    assert pt.LearnedPositionalEmbedding(0, C).weight.shape == (0, C)
    assert pt.TokenPositionEmbedding(0, MAXT, 0).wte.weight.shape == (0, 0)
    makers = (("LearnedPositionalEmbedding", lambda **kw: pt.LearnedPositionalEmbedding(
                  kw.pop("max_seq_len", MAXT), kw.pop("embed_dim", C), **kw)),
              ("TokenPositionEmbedding", lambda **kw: pt.TokenPositionEmbedding(
                  kw.pop("vocab_size", V), kw.pop("max_seq_len", MAXT), kw.pop("embed_dim", C),
                  **kw)))
    for op, make in makers:
        for seed in (-1, 2**64, 2**70):
            with pytest.raises(ValueError, match=rf"{op}: seed must be in \[0, 2\^64\).*got "
                                                 f"{seed}$") as info:
                make(seed=seed)
            one_line(info)
        for seed in (1.5, "3", None):
            with pytest.raises(TypeError, match=f"{op}: seed must be an int, got "
                                                f"{type(seed).__name__}"):
                make(seed=seed)
        for init in (None, 3, b"normal"):
            with pytest.raises(TypeError, match=f"{op}: init must be a str"):
                make(init=init)
        with pytest.raises(ValueError, match="unknown initializer 'bogus'"):
            make(init="bogus")
        sizes = ("max_seq_len", "embed_dim") + (("vocab_size",) if "Token" in op else ())
        for name in sizes:
            with pytest.raises(ValueError, match=f"{op}: {name} must be >= 0, got -1$"):
                make(**{name: -1})
            with pytest.raises(ValueError, match=f"{op}: {name} must be below 2\\^63"):
                make(**{name: 2**64})
            with pytest.raises(TypeError, match=f"{op}: {name} must be an int, got float 4.0"):
                make(**{name: 4.0})


def test_ints_the_library_or_torch_cannot_hold_are_value_errors_naming_them():
    lpe = pt.LearnedPositionalEmbedding(MAXT, C)
    for bad in (-1, torch.tensor(-1), torch.tensor(-5, dtype=torch.int8)):
        with pytest.raises(ValueError, match="position_embedding: seq_len must be >= 0, got "
                                             r"-\d$") as info:
            lpe(bad)
        one_line(info)
    with pytest.raises(ValueError, match=r"position_embedding: seq_len must be below 2\^64, got "
                                         f"{2**64}$"):
        lpe(2**64)
    assert lpe(0).shape == (0, C)
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.zeros(1, 3, dtype=torch.long)
    for bad in (2**31, 2**40, -1):
        with pytest.raises(ValueError, match=r"posemb.torch: separator must be a token id, 0 <= "
                                             rf"separator < 2\^31 .*got {bad}$") as info:
            emb(idx, separator=bad)
        one_line(info)
    assert torch.equal(emb(idx, separator=2**31 - 1), emb(idx))  # no separator in idx
    rope = pt.RotaryEmbedding({"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8,
                               "num_attention_heads": 2, "max_position_embeddings": 16},
                               "half", "BTHD")
    q = torch.randn(1, 3, 2, 4)
    for bad, kind, msg in ((-1, ValueError, "must be >= 0, got -1"),
                           (2**63, ValueError, rf"must be below 2\^63, got {2**63}"),
                           (2**64, ValueError, rf"must be below 2\^63, got {2**64}"),
                           (1.5, TypeError, "must be an int, got float 1.5"),
                           ("4", TypeError, "must be an int, got str '4'")):
        with pytest.raises(kind, match=f"RotaryEmbedding: seq_len {msg}$") as info:
            rope(q, q, seq_len=bad)
        one_line(info)
    assert all(torch.equal(a, b) for a, b in zip(rope(q, q, seq_len=16), rope(q, q)))
    cfg = rope.config
    with pytest.raises(TypeError, match="RotaryEmbedding: layout must be 'half' or 'interleaved', "
                                        "got int 3"):
        pt.RotaryEmbedding(cfg, layout=3, order="BTHD")
    with pytest.raises(ValueError, match=r"RotaryEmbedding: layout must be 'half' .* or "
                                         r"'interleaved' .*got 'bogus'$"):
        pt.RotaryEmbedding(cfg, layout="bogus", order="BTHD")
    assert pt.RotaryEmbedding(cfg, layout="interleaved", order="BTHD").layout == "interleaved"


def test_rotary_embedding_has_no_default_layout_or_order():
    """Neither the rotation layout nor the order of q's dimensions is assumed: each is named, and
    the messages say what the choices mean (issue 48: HF's (B, H, T, D) read as (B, T, H, D))."""
    cfg = {"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 8, "num_attention_heads": 2,
           "max_position_embeddings": 16}
    with pytest.raises(TypeError, match=r"^RotaryEmbedding: name the rotation layout, .*"
                                        r"layout='half' .*'interleaved'") as info:
        pt.RotaryEmbedding(cfg)
    one_line(info)
    with pytest.raises(TypeError, match=r"^RotaryEmbedding: name the order of q's and k's "
                                        r"dimensions: order='BHTD' \(batch, heads, tokens, "
                                        r"head_dim: Hugging Face's attention\) or 'BTHD'") as info:
        pt.RotaryEmbedding(cfg, "half")
    one_line(info)
    for bad in ("bhtd", "BTDH", 0):
        with pytest.raises(ValueError, match=r"RotaryEmbedding: order must be 'BHTD' .* or "
                                             r"'BTHD' .*got " + repr(bad)) as info:
            pt.RotaryEmbedding(cfg, "half", bad)
        one_line(info)
    assert pt.RotaryEmbedding(cfg, "half", order="BHTD").order == "BHTD"
    assert "order='BTHD'" in repr(pt.RotaryEmbedding(cfg, "half", "BTHD"))


def test_rotary_embedding_order_mismatch_messages_hint_the_other_order():
    cfg = {"rope_theta": 10000.0, "head_dim": 4, "hidden_size": 16, "num_attention_heads": 4,
           "num_key_value_heads": 2, "max_position_embeddings": 16}
    # HF's grouped-query q (1, 4 heads, 3 tokens, 4) and k (1, 2 heads, 3 tokens, 4) read as BTHD.
    q, k = torch.zeros(1, 4, 3, 4), torch.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match=r"^RotaryEmbedding: q \(1, 4, 3, 4\) and k "
                                         r"\(1, 2, 3, 4\) differ in B or T; the module's order "
                                         r"'BTHD' reads .* T = shape\[1\]; for Hugging Face's "
                                         r"\(batch, heads, tokens, head_dim\) make it with "
                                         r"order='BHTD'$") as info:
        pt.RotaryEmbedding(cfg, "half", "BTHD")(q, k)
    one_line(info)
    pt.RotaryEmbedding(cfg, "half", "BHTD")(q, k)  # the same tensors, named: fine
    # (B, T, H, D) tensors read as BHTD, and position ids of T = 3 tokens.
    q, k = torch.zeros(1, 3, 4, 4), torch.zeros(1, 3, 2, 4)
    with pytest.raises(ValueError, match=r"^RotaryEmbedding: q \(1, 3, 4, 4\) and k "
                                         r"\(1, 3, 2, 4\) differ in B or T; the module's order "
                                         r"'BHTD' .* make it with order='BTHD'$"):
        pt.RotaryEmbedding(cfg, "half", "BHTD")(q, k)
    with pytest.raises(ValueError, match=r"position_ids .*\(the module's order 'BHTD' reads q "
                                         r"and k as \(batch, heads, tokens, head_dim\)"):
        pt.RotaryEmbedding(cfg, "half", "BHTD")(q, q, position_ids=torch.arange(3))
    with pytest.raises(ValueError, match=r"RotaryEmbedding: q must be a \(B, H, T, D\) tensor "
                                         r"\(order 'BHTD'\), got shape \(3, 4, 4\)"):
        pt.RotaryEmbedding(cfg, "half", "BHTD")(q[0], q[0])


def test_separator_is_an_integer_never_truncated():
    emb = pt.TokenPositionEmbedding(V, MAXT, C)
    idx = torch.tensor([[1, 0, 1, 1]])
    for bad in (1.5, 0.0, "0", [0]):
        with pytest.raises(TypeError, match="posemb.torch: separator must be an int \\(a token "
                                            "id\\), got"):
            emb(idx, separator=bad)
    packed = emb(idx, separator=0)
    assert torch.equal(emb(idx, separator=np.int64(0)), packed)
    assert torch.equal(emb(idx, separator=torch.tensor(0)), packed)
    assert torch.equal(packed, emb(idx, position_ids=torch.tensor([[0, 1, 0, 1]])))
