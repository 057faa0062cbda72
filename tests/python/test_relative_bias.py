"""T5's relative position bias against PyTorch: posemb.t5_relative_bucket against Hugging Face's
T5Attention._relative_position_bucket (written out below with torch's float32 operations, as HF
writes it) for every relative position in -5000..5000 and beyond, under each of torch's CPU
kernels (its log differs by an ulp between them on some inputs); the bias against HF's
compute_bias (an nn.Embedding lookup of the buckets, permuted) bit for bit; the gradient against
torch autograd through that lookup; posemb.torch.T5RelativePositionBias as a drop-in for it;
every bad argument refused in one line; the examples of docs/t5_bias.md run as shown."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import posemb
from posemb._posemb import _testing
from posemb.torch import T5RelativePositionBias, relative_position_bias

from conftest import snapshot


def hf_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                                max_distance=128):
    """HF transformers' T5Attention._relative_position_bucket: int64 tensors in, float32 log."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def hf_compute_bias(weight, query_length, key_length, bidirectional, max_distance,
                    query_start=0, key_start=0):
    """HF's compute_bias (cache_position = query_start + arange): the buckets looked up in weight
    as its nn.Embedding does (torch.nn.functional.embedding, so that the gradient reaches weight
    itself), (Tq, Tk, H) permuted to (1, H, Tq, Tk)."""
    context = (torch.arange(query_length, dtype=torch.long) + query_start)[:, None]
    memory = (torch.arange(key_length, dtype=torch.long) + key_start)[None, :]
    buckets = hf_relative_position_bucket(memory - context, bidirectional, weight.shape[0],
                                          max_distance)
    return torch.nn.functional.embedding(buckets, weight).permute([2, 0, 1]).unsqueeze(0)


# (num_buckets, max_distance): T5's, larger ones, and small, odd and awkward ones.
BUCKETINGS = [(32, 128), (64, 256), (32, 64), (16, 32), (8, 16), (6, 7), (128, 128), (32, 512),
              (4, 5), (3, 10), (2, 3), (33, 100), (1000, 4096), (32, 1_000_000), (256, 2048)]


def valid(num_buckets, max_distance, bidirectional):
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    return max_exact >= 1 and max_distance > max_exact


CASES = [(nb, md, bi) for nb, md in BUCKETINGS for bi in (True, False) if valid(nb, md, bi)]


@pytest.mark.parametrize("num_buckets,max_distance,bidirectional", CASES)
def test_buckets_equal_hugging_faces_for_every_relative_position(num_buckets, max_distance,
                                                                  bidirectional):
    rel = torch.arange(-5000, 5001)
    want = hf_relative_position_bucket(rel, bidirectional, num_buckets, max_distance).numpy()
    got = posemb.t5_relative_bucket(rel.numpy(), bidirectional, num_buckets, max_distance)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # Far positions too, and any integer dtype and shape.
    far = torch.tensor([[-2**40, -123456789], [2**31, 2**62]])
    np.testing.assert_array_equal(
        posemb.t5_relative_bucket(far.numpy(), bidirectional, num_buckets, max_distance),
        hf_relative_position_bucket(far, bidirectional, num_buckets, max_distance).numpy())
    small = np.arange(-100, 100, dtype=np.int16)
    np.testing.assert_array_equal(
        posemb.t5_relative_bucket(small, bidirectional, num_buckets, max_distance),
        want[4900:5100])
    # Strided arrays, unsigned ones included.
    np.testing.assert_array_equal(
        posemb.t5_relative_bucket(rel.numpy()[::7], bidirectional, num_buckets, max_distance),
        want[::7])
    np.testing.assert_array_equal(
        posemb.t5_relative_bucket(np.arange(0, 5001, dtype=np.uint64)[::3], bidirectional,
                                  num_buckets, max_distance), want[5000::3])
    # An int gives an int.
    assert posemb.t5_relative_bucket(-77, bidirectional, num_buckets, max_distance) == want[4923]


HF_SCRIPT = r"""
import json, math, sys, torch
sys.path.insert(0, sys.argv[1])
from test_relative_bias import hf_relative_position_bucket, CASES
rel = torch.arange(-%d, %d + 1)
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability()
                  if hasattr(torch.backends, "cpu") else "?",
                  "buckets": [hf_relative_position_bucket(rel, bi, nb, md).tolist()
                              for nb, md, bi in CASES]}))
"""


@pytest.mark.parametrize("capability", ["default", "avx2", "avx512"])
def test_buckets_equal_hugging_faces_under_each_of_torchs_cpu_kernels(capability):
    """torch's float32 log is Sleef's on AVX2 and AVX-512 and the C library's otherwise: they
    differ by an ulp on some inputs. Every bucket of every case still equals posemb's, over a
    wider range than above (the run of each distance to max_distance and past it)."""
    reach = 20000
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    out = subprocess.run([sys.executable, "-c", HF_SCRIPT % (reach, reach),
                          os.path.dirname(__file__)], env=env, capture_output=True, text=True,
                         check=True)
    result = json.loads(out.stdout)
    rel = np.arange(-reach, reach + 1)
    for (nb, md, bi), want in zip(CASES, result["buckets"]):
        got = posemb.t5_relative_bucket(rel, bi, nb, md)
        np.testing.assert_array_equal(got, np.array(want), err_msg=f"{(nb, md, bi)}")


def test_every_bucket_boundary_of_many_bucketings_equals_hugging_faces():
    """Every num_buckets a side up to 200 with many max_distance, each distance up to
    max_distance + 2 (past it all share the last bucket): the boundaries that fall exactly on a
    distance (16 for bidirectional (32, 128): 2 in exact arithmetic) included."""
    distances = [5, 6, 7, 10, 16, 20, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000, 1024, 4096]
    checked = 0
    for half in range(2, 201):
        for md in distances:
            if md <= half // 2:
                continue
            rel = -torch.arange(0, md + 3)
            want = hf_relative_position_bucket(rel, False, half, md).numpy()
            np.testing.assert_array_equal(posemb.t5_relative_bucket(rel.numpy(), False, half, md),
                                          want, err_msg=f"{half} buckets, {md}")
            checked += 1
    assert checked > 2000


@pytest.mark.parametrize("H,Tq,Tk,query_start,key_start", [
    (1, 1, 1, 0, 0), (8, 16, 16, 0, 0), (3, 70, 140, 0, 0), (4, 1, 701, 700, 0),
    (2, 5, 33, 28, 0), (6, 9, 4, 0, 20), (12, 130, 65, 0, 0), (2, 3, 7, 10_000, 2)])
@pytest.mark.parametrize("num_buckets,max_distance,bidirectional",
                         [(32, 128, True), (32, 128, False), (8, 16, True), (3, 10, False),
                          (33, 100, True)])
def test_bias_and_gradient_equal_pytorchs(rng, H, Tq, Tk, query_start, key_start, num_buckets,
                                          max_distance, bidirectional):
    table = rng.normal(size=(num_buckets, H)).astype(np.float32)
    kw = dict(bidirectional=bidirectional, max_distance=max_distance, query_start=query_start,
              key_start=key_start)
    bias = posemb.relative_bias_forward(table, Tq, Tk, **kw)
    weight = torch.tensor(table, requires_grad=True)
    want = hf_compute_bias(weight, Tq, Tk, bidirectional, max_distance, query_start, key_start)
    assert bias.dtype == np.float32 and bias.shape == (H, Tq, Tk)
    assert snapshot(bias) == snapshot(want[0].detach().numpy())  # a gather: bit for bit

    dbias = rng.normal(size=(H, Tq, Tk)).astype(np.float32)
    want[0].backward(torch.tensor(dbias))
    dtable = posemb.relative_bias_backward(dbias, num_buckets, **kw)
    # posemb sums in double and rounds once; torch in float32: within torch's float32 sum of the
    # bucket's terms (count * 2^-24 of their magnitude) of each other.
    buckets = posemb.t5_relative_bucket(
        (np.arange(Tk)[None, :] + key_start) - (np.arange(Tq)[:, None] + query_start),
        bidirectional, num_buckets, max_distance)
    count = np.bincount(buckets.ravel(), minlength=num_buckets)[:, None]
    magnitude = np.zeros((num_buckets, H))
    np.add.at(magnitude, buckets.ravel(), np.abs(dbias).reshape(H, -1).T)
    np.testing.assert_array_less(np.abs(dtable - weight.grad.numpy()),
                                 (count + 1) * 2.0**-24 * magnitude + 1e-30)
    # And within one float32 rounding of the exact sum (float64 autograd).
    weight64 = torch.tensor(table, dtype=torch.float64, requires_grad=True)
    hf_compute_bias(weight64, Tq, Tk, bidirectional, max_distance, query_start,
                    key_start)[0].backward(torch.tensor(dbias, dtype=torch.float64))
    exact = weight64.grad.numpy()
    np.testing.assert_array_less(np.abs(dtable - exact),
                                 2.0**-24 * np.abs(exact) + count * 2.0**-50 * magnitude + 1e-30)


def test_out_and_dtable_are_written_over_and_added_into(rng):
    table = rng.normal(size=(32, 4)).astype(np.float32)
    out = np.full((4, 6, 9), 7.0, np.float32)
    got = posemb.relative_bias_forward(table, 6, 9, out=out)
    assert got is out
    np.testing.assert_array_equal(out, posemb.relative_bias_forward(table, 6, 9))
    dbias = rng.normal(size=(4, 6, 9)).astype(np.float32)
    dtable = np.full((32, 4), 0.5, np.float32)
    assert posemb.relative_bias_backward(dbias, 32, dtable=dtable) is dtable
    fresh = posemb.relative_bias_backward(dbias, 32)
    np.testing.assert_array_equal(dtable, (fresh + np.float32(0.5)).astype(np.float32))


def test_the_kernels_run_without_the_gil(rng):
    table = rng.normal(size=(32, 2)).astype(np.float32)
    for call in (lambda: posemb.t5_relative_bucket(np.arange(-5, 5)),
                 lambda: posemb.relative_bias_forward(table, 3, 4),
                 lambda: posemb.relative_bias_backward(np.ones((2, 3, 4), np.float32), 32)):
        without, held = _testing.kernel_counts()
        call()
        assert _testing.kernel_counts() == (without + 1, held)


# --- posemb.torch ---------------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional,max_distance", [(True, 128), (False, 64)])
def test_module_is_a_drop_in_for_hugging_faces_compute_bias(bidirectional, max_distance):
    H, Tq, Tk = 6, 40, 40
    module = T5RelativePositionBias(H, 32, max_distance, bidirectional, seed=3)
    assert module.weight.shape == (32, H)
    weight = module.weight.detach().clone().requires_grad_(True)
    got = module(Tq, Tk)
    want = hf_compute_bias(weight, Tq, Tk, bidirectional, max_distance)
    assert got.shape == (1, H, Tq, Tk) and torch.equal(got, want)
    # In attention, as T5 uses it: scores + bias, softmax, a loss.
    torch.manual_seed(0)
    scores = torch.randn(2, H, Tq, Tk)
    loss_of = lambda bias: (torch.softmax(scores + bias, -1) * torch.randn(2, H, Tq, Tk,
                            generator=torch.Generator().manual_seed(1))).sum()
    loss_of(got).backward()
    loss_of(want).backward()
    torch.testing.assert_close(module.weight.grad, weight.grad, rtol=1e-5, atol=1e-6)
    # Cached decoding: the last query at position Tq - 1 against every key, one row of the bias.
    step = module(1, Tk, query_start=Tq - 1)
    assert torch.equal(step[0, :, 0], got[0, :, -1].detach())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_module_follows_its_weights_dtype(dtype):
    module = T5RelativePositionBias(4, 16, 20, False, seed=5).to(dtype)
    got = module(7, 9, query_start=2)
    assert got.dtype == dtype
    want = hf_compute_bias(module.weight.detach(), 7, 9, False, 20, 2)
    assert torch.equal(got, want)  # a gather in any dtype: the table's values exactly
    got.float().square().sum().backward()
    assert module.weight.grad.dtype == dtype


def test_gradcheck_and_double_backward():
    # The kernels compute in float32: on a dyadic grid (multiples of 2^-6 below 2) with steps of
    # 2^-6 every value, perturbed value and sum is exact in float32, so gradcheck and
    # gradgradcheck (create_graph=True: the backward's backward is the forward again) hold with
    # zero tolerance.
    g = torch.Generator().manual_seed(7)
    grid = lambda *shape: (torch.randint(-64, 64, shape, generator=g) / 64).double()
    weight = grid(8, 3).requires_grad_()
    f = lambda w: relative_position_bias(w, 5, 7, bidirectional=True, max_distance=16,
                                         query_start=1)
    assert torch.autograd.gradcheck(f, (weight,), eps=2**-6, atol=0, rtol=0)
    assert torch.autograd.gradgradcheck(f, (weight,), (grid(3, 5, 7).requires_grad_(),),
                                        eps=2**-6, atol=0, rtol=0)


def test_module_buckets_and_repr():
    module = T5RelativePositionBias(2, bidirectional=False)
    rel = torch.arange(-200, 10)
    assert torch.equal(module.buckets(rel), hf_relative_position_bucket(rel, False, 32, 128))
    assert module.buckets(-113) == 31
    assert "num_buckets=32, max_distance=128, bidirectional=False" in repr(module)


def test_module_trains_its_table_with_an_optimizer():
    module = T5RelativePositionBias(2, 8, 16, True, init="zeros")
    target = torch.linspace(-1, 1, 2 * 6 * 6).reshape(1, 2, 6, 6)
    opt = torch.optim.SGD(module.parameters(), lr=0.5)
    first = None
    for _ in range(50):
        opt.zero_grad()
        loss = (module(6) - target).square().mean()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.5 * first


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("num_buckets,max_distance,bidirectional,message", [
    (1, 128, False, "num_buckets = 1 leaves no bucket for exact distances"),
    (3, 128, True, "a bidirectional bucketing needs num_buckets >= 4"),
    (32, 8, True, "max_distance = 8 must be above max_exact = 8"),
    (32, 3, False, "max_distance = 3 must be above max_exact = 16"),
    (2**31 + 2, 2**40, True, "num_buckets = 2147483650 is above 2^31"),
])
def test_bucketings_t5_cannot_compute_are_refused(num_buckets, max_distance, bidirectional,
                                                  message):
    message = re.escape(message)
    with pytest.raises(ValueError, match="t5_relative_bucket: .*" + message):
        posemb.t5_relative_bucket(5, bidirectional, num_buckets, max_distance)
    with pytest.raises(ValueError, match=message):
        posemb.t5_relative_bucket(np.arange(3), bidirectional, num_buckets, max_distance)
    with pytest.raises(ValueError, match="T5RelativePositionBias: .*" + message):
        T5RelativePositionBias(2, num_buckets, max_distance, bidirectional)
    if num_buckets < 100:
        table = np.zeros((num_buckets, 2), np.float32)
        out = np.full((2, 3, 3), 9.0, np.float32)
        with pytest.raises(ValueError, match="relative_bias_forward: .*" + message):
            posemb.relative_bias_forward(table, 3, 3, bidirectional=bidirectional,
                                         max_distance=max_distance, out=out)
        assert (out == 9.0).all()


def test_bad_arguments_are_refused_in_one_line_and_write_nothing():
    table = np.zeros((32, 2), np.float32)
    with pytest.raises(TypeError, match="t5_relative_bucket: relative_position must be an int or "
                                        "an array of integers .* got an array of float64"):
        posemb.t5_relative_bucket(np.array([1.5]))
    with pytest.raises(TypeError, match="got bool"):
        posemb.t5_relative_bucket(True)
    with pytest.raises(TypeError, match="got str"):
        posemb.t5_relative_bucket("5")
    with pytest.raises(ValueError, match="relative position 9223372036854775808 is beyond int64"):
        posemb.t5_relative_bucket(2**63)
    with pytest.raises(ValueError, match="relative position 18446744073709551615 is beyond int64"):
        posemb.t5_relative_bucket(np.array([2**64 - 1], np.uint64))
    with pytest.raises(TypeError, match="table must be a float32 array, got float64"):
        posemb.relative_bias_forward(table.astype(np.float64), 2, 2)
    out = np.full((2, 3, 4), 5.0, np.float32)
    with pytest.raises(ValueError, match=r"out must have shape \(H, Tq, Tk\) = \(2, 3, 5\)"):
        posemb.relative_bias_forward(table, 3, 5, out=out)
    with pytest.raises(ValueError, match="query_start = 4611686018427387905 is past 2\\^62"):
        posemb.relative_bias_forward(table, 3, 4, query_start=2**62 + 1, out=out)
    assert (out == 5.0).all()
    dtable = np.full((32, 2), 1.0, np.float32)
    with pytest.raises(ValueError, match=r"dtable must have shape \(num_buckets, H\) = \(16, 2\)"):
        posemb.relative_bias_backward(np.ones((2, 3, 4), np.float32), 16, dtable=dtable)
    with pytest.raises(ValueError, match="dbias must have 3 dimensions"):
        posemb.relative_bias_backward(np.ones((3, 4), np.float32), 32, dtable=dtable)
    with pytest.raises(ValueError, match="num_buckets must be >= 0, got -1"):
        posemb.relative_bias_backward(np.ones((2, 3, 4), np.float32), -1)
    assert (dtable == 1.0).all()
    with pytest.raises(TypeError, match="T5RelativePositionBias: bidirectional must be a bool"):
        T5RelativePositionBias(2, bidirectional=1)
    with pytest.raises(ValueError, match="relative_position_bias: query_length must be >= 0"):
        relative_position_bias(torch.zeros(32, 2), -3)
    with pytest.raises(TypeError, match="relative_position_bias: weight must be a float32"):
        relative_position_bias(torch.zeros(32, 2, dtype=torch.int32), 3)


def test_torch_jit_trace_follows_the_lengths(tmp_path):
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rpb = T5RelativePositionBias(4, 32, 64, False, seed=2)

        def forward(self, scores):  # (B, H, Tq, Tk)
            return scores + self.rpb(scores.shape[2], scores.shape[3], query_start=1)

    layer = Layer()
    traced = torch.jit.trace(layer, torch.randn(2, 4, 8, 8))
    x = torch.randn(3, 4, 12, 13)
    assert torch.equal(traced(x), layer(x))  # another batch and other lengths
    traced(x).square().sum().backward()
    assert layer.rpb.weight.grad.abs().sum() > 0
    torch.jit.save(traced, str(tmp_path / "layer.pt"))
    assert torch.equal(torch.jit.load(str(tmp_path / "layer.pt"))(x), layer(x))


def test_either_module_may_be_imported_first():
    for first in ("posemb._torch_relative_bias", "posemb.torch"):
        subprocess.run([sys.executable, "-c", f"import {first}\n"
                        "from posemb.torch import T5RelativePositionBias, relative_position_bias\n"
                        "assert T5RelativePositionBias(2)(3).shape == (1, 2, 3, 3)"],
                       check=True, env=dict(os.environ))


def doc_examples(page, heading=None):
    """The ```python blocks of a docs page (under `heading` only, when given), each with the
    output block that follows it."""
    text = (Path(__file__).resolve().parents[2] / "docs" / page).read_text()
    if heading is not None:
        text = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```\n\n```\n(.*?)```", text, re.S)
    assert blocks, f"no python example with its output in {page}"
    return blocks


@pytest.mark.parametrize("page,heading", [("t5_bias.md", None),
                                          ("python.md", "## T5's relative position bias")])
def test_the_docs_examples_print_what_the_docs_show(page, heading):
    for code, shown in doc_examples(page, heading):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ))
        assert run.returncode == 0, run.stderr
        assert run.stdout == shown, f"{page}:\n{code}"
