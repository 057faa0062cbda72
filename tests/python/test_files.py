"""Files from Python: tensor files as numpy arrays without a further copy, position tables,
resizing, and the file errors. Reference files are assembled here by hand (struct + json)."""
import gc
import json
import struct
import weakref
from pathlib import Path

import numpy as np
import pytest

import posemb

DATA = Path(__file__).resolve().parents[1] / "data"


def write_safetensors_by_hand(path, tensors, metadata=None):
    """tensors: [(name, dtype name, shape, raw bytes)]."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


@pytest.fixture
def checkpoint(tmp_path, rng):
    wpe = rng.normal(size=(6, 4)).astype(np.float32)
    half = rng.normal(size=(2, 3)).astype(np.float16)
    bf16_bits = np.array([0x3F80, 0xC000, 0x3DCD], np.uint16)  # 1.0, -2.0, 0.10009765625
    f64 = rng.normal(size=(2, 2, 2))
    ids = np.arange(5, dtype=np.int64)
    path = tmp_path / "ckpt.safetensors"
    write_safetensors_by_hand(path, [
        ("transformer.wpe.weight", "F32", wpe.shape, wpe.tobytes()),
        ("h", "F16", half.shape, half.tobytes()),
        ("b", "BF16", (3,), bf16_bits.tobytes()),
        ("d", "F64", f64.shape, f64.tobytes()),
        ("position_ids", "I64", ids.shape, ids.tobytes()),
    ], {"step": "10"})
    return path, wpe, half, f64


def test_tensor_file_arrays_share_the_decoded_values(checkpoint):
    path, wpe, half, f64 = checkpoint
    f = posemb.read_safetensors(str(path))
    assert f.names == ["transformer.wpe.weight", "h", "b", "d", "position_ids"]
    assert f.metadata == {"step": "10"} and len(f) == 5 and "h" in f and "x" not in f
    assert f.dtype("b") == "BF16" and f.shape("d") == [2, 2, 2]
    a = f["transformer.wpe.weight"]
    assert a.dtype == np.float32 and a.tobytes() == wpe.tobytes() and not a.flags.writeable
    assert np.shares_memory(a, f["transformer.wpe.weight"])  # no copy per access
    # F16 and I64 as they are stored, views of the file; BF16 (no numpy type) widened exactly
    assert f["h"].dtype == np.float16 and f["h"].tobytes() == half.tobytes()
    assert np.shares_memory(f["h"], f["h"]) and not f["h"].flags.writeable
    assert f["b"].dtype == np.float32
    np.testing.assert_array_equal(f["b"], [1.0, -2.0, 0.10009765625])
    assert f["d"].dtype == np.float64 and f["d"].tobytes() == f64.tobytes()
    ids = f["position_ids"]
    assert ids.dtype == np.int64 and ids.shape == (5,) and not ids.flags.writeable
    np.testing.assert_array_equal(ids, np.arange(5))
    with pytest.raises(IndexError):
        f["missing"]
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is not None and a.tobytes() == wpe.tobytes()  # the array keeps the file alive


def test_npy_round_trips_with_numpy(tmp_path, rng):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got = posemb.read_npy(str(tmp_path / "x.npy"))
    assert got.shape == x.shape and got.tobytes() == x.tobytes()
    posemb.write_npy(str(tmp_path / "y.npy"), x.astype(np.float64))
    assert np.load(tmp_path / "y.npy").tobytes() == x.astype(np.float64).tobytes()


def test_npy_in_fortran_order_or_big_endian_reads_as_np_load(tmp_path, rng):
    x = rng.normal(size=(6, 7)).astype(np.float32)
    for name, saved in [("f", np.asfortranarray(x)), ("be", x.astype(">f4")),
                        ("fbe", np.asfortranarray(x).astype(">f4")), ("t", x.T)]:
        np.save(tmp_path / (name + ".npy"), saved)
        got = posemb.read_npy(str(tmp_path / (name + ".npy")))
        want = np.load(tmp_path / (name + ".npy"))
        assert got.dtype == np.float32 and got.flags["C_CONTIGUOUS"], name
        assert not got.flags.writeable, name
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == np.ascontiguousarray(want, dtype="<f4").tobytes(), name


def test_write_safetensors_in_a_chosen_dtype(tmp_path, rng):
    a = rng.normal(size=(3, 2)).astype(np.float32)
    path = tmp_path / "w.safetensors"
    posemb.write_safetensors(str(path), {"a": a, "z": np.zeros(4)}, {"k": "v"}, dtype="bf16")
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    assert header["a"]["dtype"] == "BF16" and header["__metadata__"] == {"k": "v"}
    f = posemb.read_safetensors(str(path))
    # bfloat16 rounding to nearest even, as torch does: within half an ulp of 2^-8 relative.
    np.testing.assert_allclose(f["a"], a, rtol=2.0**-8)
    with pytest.raises(ValueError, match="C-contiguous"):
        posemb.write_safetensors(str(path), {"a": a.T})
    # integer and bool arrays round-trip in their own dtype
    for arr in (np.arange(6, dtype=np.int32).reshape(2, 3), np.array([True, False])):
        posemb.write_npy(str(tmp_path / "i.npy"), arr)
        back = np.load(tmp_path / "i.npy")
        assert back.dtype == arr.dtype and back.tobytes() == arr.tobytes()
    with pytest.raises(TypeError, match="float, integer or bool array"):
        posemb.write_npy(str(tmp_path / "c.npy"), np.zeros(3, np.complex64))


def test_position_tables_load_save_and_resize(checkpoint, tmp_path):
    path, wpe, *_ = checkpoint
    t = posemb.load_position_table(str(path))
    assert t.source_tensor == "transformer.wpe.weight" and "transformer.wpe.weight" in t.how_found
    assert t.values.tobytes() == wpe.tobytes() and t.positions == 6 and t.dtype == "F32"
    v = t.values
    assert np.shares_memory(v, t.values) and v.flags.writeable
    t.reserved_rows = 2
    t.training_length = 4
    np.testing.assert_array_equal(t.usable(), wpe[2:])
    out = tmp_path / "pe.safetensors"
    posemb.save_position_table(str(out), t, dtype="f64")
    back = posemb.load_position_table(str(out))
    assert (back.reserved_rows, back.training_length, back.dtype) == (2, 4, "F64")
    assert back.values.tobytes() == wpe.tobytes()
    # .npy holds every row, the reserved ones first, and no metadata
    posemb.save_position_table(str(tmp_path / "pe.npy"), t)
    assert np.load(tmp_path / "pe.npy").tobytes() == wpe.tobytes()

    longer = posemb.resize_table(t, 10, "copy")
    assert longer.values.shape == (12, 4) and "resize" in longer.provenance
    np.testing.assert_array_equal(longer.values[:2], wpe[:2])  # reserved rows kept
    np.testing.assert_array_equal(longer.usable(), wpe[2:][np.arange(10) % 4])
    grown = posemb.resize_table(t, 9, "random", initializer="zeros", seed=3)
    np.testing.assert_array_equal(grown.usable()[4:], 0)
    with pytest.raises(ValueError, match="truncate"):
        posemb.resize_table(t, 2, "copy")
    with pytest.raises(ValueError, match="copy"):
        posemb.resize_table(t, 8, "stretch")

    made = posemb.PositionTable(np.ones((3, 2), np.float32), reserved_rows=1)
    assert made.positions == 2 and made.values.dtype == np.float32


def test_malformed_files_raise_file_format_error_naming_the_file():
    expected = {}
    for line in (DATA / "malformed" / "EXPECTED.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, phrase = line.split("\t")
            expected[name] = phrase
    assert len(expected) > 40
    for name, phrase in expected.items():
        path = str(DATA / "malformed" / name)
        read = posemb.read_npy if name.endswith(".npy") else posemb.read_safetensors
        with pytest.raises(posemb.FileFormatError) as info:
            read(path)
        assert isinstance(info.value, ValueError)
        assert info.value.path == path and path in str(info.value)
        assert phrase in str(info.value), (name, str(info.value))


def test_io_failures_are_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        posemb.read_safetensors(str(tmp_path / "absent.safetensors"))
    assert "absent.safetensors" in str(info.value)
    with pytest.raises(posemb.FileFormatError, match="no position table found"):
        write_safetensors_by_hand(tmp_path / "none.safetensors", [("x", "F32", (1,), b"\0" * 4)])
        posemb.load_position_table(str(tmp_path / "none.safetensors"))
