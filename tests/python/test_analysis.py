"""Table analysis from Python (posemb/table_analysis.hpp through python/src/analysis.cpp)
against numpy in float64: row norms and their statistics, unit rows, the cosine-similarity
matrix (thinned), the distance profile, reserved rows; and the resizes a file records
(posemb.resizes) read back as dicts. Tolerances follow from float32's epsilon and the row
width."""
import numpy as np
import pytest

import posemb

EPS32 = np.finfo(np.float32).eps


def table(rng, rows, dim):
    t = rng.normal(0, 0.02, (rows, dim))
    t[4::5] *= 1000  # norms far apart
    return t.astype(np.float32)


def numpy_cosine(t):
    t = t.astype(np.float64)
    n = np.linalg.norm(t, axis=1)
    safe = np.where(n > 0, n, 1)
    u = t / safe[:, None]
    return np.where((n[:, None] > 0) & (n[None, :] > 0), u @ u.T, 0.0)


def cosine_tol(dim):
    # unit rows rounded to float32, then dim products summed in float32 over 8 partial sums
    return (dim / 8 + 12) * EPS32


@pytest.mark.parametrize("dim", [1, 7, 8, 33, 768])
def test_norms_and_stats_match_numpy(rng, dim):
    t = table(rng, 13, dim)
    norms = posemb.row_norms(t)
    want = np.linalg.norm(t.astype(np.float64), axis=1)
    assert norms.dtype == np.float64 and norms.shape == (13,)
    np.testing.assert_allclose(norms, want, rtol=(dim + 2) * np.finfo(np.float64).eps)
    s = posemb.row_norm_stats(t)
    tol = want.max() * (dim + 40) * np.finfo(np.float64).eps
    assert abs(s["min"] - want.min()) <= tol and abs(s["max"] - want.max()) <= tol
    assert abs(s["mean"] - want.mean()) <= tol
    assert abs(s["stddev"] - want.std()) <= want.max() ** 2 / want.std() * (dim + 40) * 2.2e-16


def test_unit_rows_match_numpy_and_keep_zero_rows(rng):
    t = table(rng, 9, 33)
    t[3] = 0
    u = posemb.unit_rows(t)
    assert u.dtype == np.float32 and u.shape == t.shape
    norms = np.linalg.norm(t.astype(np.float64), axis=1)
    want = t.astype(np.float64) / np.maximum(norms, 1e-300)[:, None]
    np.testing.assert_allclose(u, want, rtol=2 * EPS32, atol=1e-30)
    assert not u[3].any()


@pytest.mark.parametrize("dim", [1, 5, 9, 64, 300])
def test_cosine_similarity_matches_numpy_and_thins(rng, dim):
    t = table(rng, 11, dim)
    t[6] = 0
    s = posemb.cosine_similarity(t)
    assert s.dtype == np.float32 and s.shape == (11, 11)
    np.testing.assert_allclose(s, numpy_cosine(t), atol=cosine_tol(dim), rtol=0)
    assert (s == s.T).all() and not s[6].any() and (np.abs(s) <= 1).all()
    for step in (2, 3, 11, 12):
        thin = posemb.cosine_similarity(t, step)
        assert thin.shape == ((11 + step - 1) // step,) * 2
        assert (thin == s[::step, ::step]).all(), step  # the same cells, bit for bit


def test_distance_profile_matches_numpy(rng):
    for rows in (1, 2, 17, 64, 65):
        t = table(rng, rows, 24)
        offsets, means = posemb.distance_profile(t)
        want_d = [d for d in (2 ** k for k in range(8)) if d < rows]
        assert offsets.dtype == np.int64 and means.dtype == np.float64
        assert offsets.tolist() == want_d, rows
        c = numpy_cosine(t)
        for d, m in zip(want_d, means):
            want = np.mean([c[i, i + d] for i in range(rows - d)])
            assert abs(m - want) <= cosine_tol(24) + 4 * EPS32, (rows, d)


def test_reserved_rows(rng, tmp_path):
    t = rng.normal(size=(12, 4)).astype(np.float32)
    assert posemb.likely_reserved_rows(t) == 0
    t[1] = 0  # RoBERTa's padding row
    assert posemb.likely_reserved_rows(t) == 2
    pt = posemb.PositionTable(t)
    assert posemb.unstated_reserved_rows(pt) == 2
    assert posemb.unstated_reserved_rows(pt, caller_gave_them=True) is None
    path = str(tmp_path / "t.safetensors")
    pt.reserved_rows = 2
    posemb.save_position_table(path, pt)
    assert posemb.unstated_reserved_rows(posemb.load_position_table(path)) is None  # recorded


def test_bad_arguments_name_the_operation(rng):
    with pytest.raises(TypeError, match="cosine_similarity: table must be a float32"):
        posemb.cosine_similarity(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="step"):
        posemb.cosine_similarity(np.zeros((3, 2), np.float32), 0)
    with pytest.raises(ValueError, match="row_norms"):
        posemb.row_norms(np.zeros((3, 4), np.float32)[:, ::2])


def test_resizes_are_data(rng, tmp_path):
    t = posemb.PositionTable(rng.normal(size=(7, 4)).astype(np.float32), reserved_rows=1)
    r = posemb.resize_table(t, 9, "random", seed=5, stddev=0.5)
    assert r.resizes == [{"operation": "resize", "method": "random", "from_positions": 6,
                          "to_positions": 9, "reserved_rows": 1, "source_file": "",
                          "source_tensor": "", "initializer": "normal", "stddev": 0.5, "seed": 5,
                          "scale": None}]
    path = str(tmp_path / "r.safetensors")
    posemb.save_position_table(path, posemb.resize_table(r, 12, "copy"))
    back = posemb.load_position_table(path)
    assert [x["method"] for x in back.resizes] == ["random", "copy"]
    md = posemb.read_safetensors(path).metadata
    assert posemb.recorded_resizes(md) == back.resizes
    assert "resize: copy 9 -> 12 positions" in back.provenance
    with pytest.raises(posemb.FileFormatError, match="posemb.resizes"):
        posemb.recorded_resizes({"posemb.resizes": "[1]"}, "x.safetensors")
