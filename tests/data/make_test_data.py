#!/usr/bin/env python3
"""Regenerates the committed test files in tests/data/valid and tests/data/malformed.

Run with Debian's python (numpy): /usr/bin/python3 tests/data/make_test_data.py
The safetensors files are assembled here by hand (struct + json), independently of posemb's
writer. EXPECTED.tsv lists, for each malformed file, a phrase its error message must contain.
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VALID = os.path.join(HERE, "valid")
BAD = os.path.join(HERE, "malformed")
expected = []


def st_bytes(header, data, header_len=None):
    text = json.dumps(header, separators=(",", ":")).encode() if not isinstance(header, bytes) else header
    n = len(text) if header_len is None else header_len
    return struct.pack("<Q", n) + text + data


def put(dirname, name, blob):
    with open(os.path.join(dirname, name), "wb") as f:
        f.write(blob)


def bad(name, blob, phrase):
    put(BAD, name, blob)
    expected.append((name, phrase))


def npy_bytes(header_text, data, major=1, header_len=None):
    h = header_text.encode()
    prefix = 10 if major == 1 else 12
    pad = (64 - (prefix + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    n = len(h) if header_len is None else header_len
    lenfield = struct.pack("<H", n) if major == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([major, 0]) + lenfield + h + data


rng = np.random.default_rng(20261130)
wpe = (rng.standard_normal((6, 4)) * 0.02).astype("<f4")
other = rng.standard_normal((2, 3)).astype("<f8")

# ---- valid files (also the fuzzers' seed corpus) ----
d1 = wpe.tobytes()
d2 = other.tobytes()
header = {
    "__metadata__": {"format": "pt", "posemb.training_length": "6"},
    "wpe.weight": {"dtype": "F32", "shape": [6, 4], "data_offsets": [0, len(d1)]},
    "h.0.attn.bias": {"dtype": "F64", "shape": [2, 3], "data_offsets": [len(d1), len(d1) + len(d2)]},
}
put(VALID, "gpt2_like.safetensors", st_bytes(header, d1 + d2))
f16 = wpe.astype("<f2").tobytes()
bf16 = (wpe.view("<u4") >> 16).astype("<u2").tobytes()
ids = np.arange(6, dtype="<i8").tobytes()
header = {
    "bert.embeddings.position_embeddings.weight": {"dtype": "F16", "shape": [6, 4], "data_offsets": [0, 48]},
    "bert.embeddings.token_type_embeddings.weight": {"dtype": "BF16", "shape": [6, 4], "data_offsets": [48, 96]},
    "bert.embeddings.position_ids": {"dtype": "I64", "shape": [1, 6], "data_offsets": [96, 144]},
}
put(VALID, "bert_like_f16.safetensors", st_bytes(header, f16 + bf16 + ids))
put(VALID, "empty.safetensors", st_bytes({}, b""))
for major in (1, 2, 3):
    with open(os.path.join(VALID, f"v{major}.npy"), "wb") as f:
        np.lib.format.write_array(f, wpe, version=(major, 0))
np.save(os.path.join(VALID, "f64_1d.npy"), other.reshape(-1))
# Fortran order and big-endian (read into C order, little-endian), 2-D and 3-D.
np.save(os.path.join(VALID, "fortran_be.npy"), np.asfortranarray(wpe).astype(">f4"))
np.save(os.path.join(VALID, "fortran_3d.npy"), np.asfortranarray(other.reshape(1, 2, 3)[:, :, :]).astype("<f8"))

# ---- malformed safetensors ----
good = st_bytes({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, bytes(16))
bad("empty_file.safetensors", b"", "fewer than the 8-byte header length")
bad("short.safetensors", b"\x05\x00\x00", "fewer than the 8-byte header length")
bad("truncated_data.safetensors", good[:-5], "outside the")
bad("truncated_header.safetensors", good[:20], "bytes follow")
bad("header_len_lies.safetensors", st_bytes(b'{"a":1}', b"", header_len=1000), "bytes follow")
bad("huge_header_len.safetensors", struct.pack("<Q", 1 << 62) + b"{}", "exceeds the 100000000-byte limit")
bad("header_len_max.safetensors", struct.pack("<Q", (1 << 64) - 1) + b"{}", "exceeds the 100000000-byte limit")
bad("non_object_json.safetensors", st_bytes(b"[1, 2, 3]", b""), "must be a JSON object")
bad("invalid_json.safetensors", st_bytes(b'{"a": {"dtype": "F32",', b""), "not valid JSON")
bad("shape_2pow63.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [1 << 63, 2], "data_offsets": [0, 8]}}, bytes(8)),
    "overflows 64 bits")
bad("shape_2pow63_u8.safetensors",
    st_bytes({"a": {"dtype": "U8", "shape": [1 << 63], "data_offsets": [0, 8]}}, bytes(8)),
    "needs 9223372036854775808 bytes")
bad("shape_too_big_for_json.safetensors",
    st_bytes(b'{"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}}', bytes(4)),
    "not a non-negative integer")
bad("negative_shape.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}}, bytes(16)),
    "not a non-negative integer")
bad("float_shape.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}}, bytes(8)),
    "not a non-negative integer")
bad("size_mismatch.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 16]}}, bytes(16)),
    "needs 24 bytes")
bad("overlap.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
              "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, bytes(24)),
    "overlap")
bad("hole.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}}, bytes(20)),
    "belong to no tensor")
bad("trailing_bytes.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(12)),
    "last 4 bytes")
# The JSON parser takes a NUL for the end of the input: what follows it must not be ignored.
bad("nul_in_header.safetensors",
    st_bytes(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}\x00{"b": junk', bytes(8)),
    "NUL byte")
bad("offsets_reversed.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, bytes(8)),
    "reversed")
bad("offsets_u64_max.safetensors",
    st_bytes({"a": {"dtype": "U8", "shape": [18446744073709551615],
                    "data_offsets": [0, 18446744073709551615]}}, bytes(8)),
    "outside the")
bad("bad_dtype.safetensors",
    st_bytes({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
    "unknown dtype 'F33'")
bad("duplicate_names.safetensors",
    st_bytes(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
             b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)),
    "twice")
bad("metadata_not_string.safetensors",
    st_bytes({"__metadata__": {"step": 5}}, b""), "not a string")
bad("metadata_not_object.safetensors", st_bytes({"__metadata__": "x"}, b""),
    "__metadata__ is not a JSON object")
bad("missing_field.safetensors", st_bytes({"a": {"dtype": "F32", "shape": [0]}}, b""), "lacks")
bad("unknown_field.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0], "x": 1}}, b""),
    "unknown field 'x'")
bad("entry_not_object.safetensors", st_bytes({"a": 7}, b""), "is not a JSON object")
bad("deep_nesting.safetensors", st_bytes(b'{"a":' + b"[" * 100 + b"]" * 100 + b"}", b""),
    "is not a JSON object")
bad("deep_metadata.safetensors", st_bytes(b'{"__metadata__":{"k":' + b"[" * 100 + b"]" * 100 + b"}}", b""),
    "not a string")
bad("rank_65.safetensors",
    st_bytes({"a": {"dtype": "U8", "shape": [1] * 65, "data_offsets": [0, 1]}}, bytes(1)),
    "more than 64 dimensions")
bad("long_name.safetensors",
    st_bytes({"n" * 1025: {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
    "longer than the limit of 1024 bytes")
bad("duplicate_field.safetensors",
    st_bytes(b'{"a":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}}', bytes(1)),
    "field 'shape' twice")
bad("duplicate_metadata_key.safetensors",
    st_bytes(b'{"__metadata__":{"k":"1","k":"2"}}', b""), "key 'k' twice")
bad("control_bytes_in_name.safetensors",
    st_bytes({"evil\x1b[2J\x00": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, bytes(4)),
    "'evil\\x1b[2J\\x00'")
bad("not_a_tensor_file.safetensors", b"hello, world: not a tensor file", "header length")
bad("offsets_not_pair.safetensors",
    st_bytes({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}, bytes(4)),
    "data_offsets is not an array [begin, end]")

# ---- malformed .npy ----
data = bytes(24)
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
bad("complex64.npy", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data),
    "not supported")
bad("rank_65.npy",
    npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (" + "1, " * 65 + "), }", bytes(1)),
    "more than 64 dimensions")
bad("control_bytes_in_header.npy",
    npy_bytes("{'descr': '<f4\x1b[31m', 'fortran_order': False, 'shape': (6,), }", data),
    "'<f4\\x1b[31m'")
bad("bad_magic.npy", b"\x93NUMPX" + npy_bytes(hdr, data)[6:], "not a .npy file")
bad("short.npy", b"\x93NUMPY\x01", "not a .npy file")
bad("version_9.npy", b"\x93NUMPY\x09\x00" + npy_bytes(hdr, data)[8:], "version 9.0")
bad("truncated_data.npy", npy_bytes(hdr, data[:-4]), "promises 24 bytes")
bad("trailing_data.npy", npy_bytes(hdr, data + bytes(4)), "promises 24 bytes")
bad("header_len_lies.npy", npy_bytes(hdr, b"", header_len=60000), "bytes follow")
bad("huge_header_len.npy", npy_bytes(hdr, data, major=2, header_len=(1 << 32) - 1), "exceeds the")
bad("shape_2pow63.npy",
    npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808, 2), }", data),
    "overflows 64 bits")
bad("shape_2pow64.npy",
    npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,), }", data),
    "overflows 64 bits")
bad("missing_key.npy", npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", data), "lacks")
bad("extra_key.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", data),
    "unexpected or repeated key 'x'")
bad("repeated_key.npy",
    npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", data),
    "unexpected or repeated key 'descr'")
bad("garbage_header.npy", npy_bytes("hello", data), "expected '{'")
bad("negative_shape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", data),
    "non-negative integer")
bad("text_after_dict.npy", npy_bytes(hdr + " junk", data), "text after the dict")

with open(os.path.join(BAD, "EXPECTED.tsv"), "w") as f:
    f.write("# file\tphrase the error message must contain (the path is checked too)\n")
    for name, phrase in expected:
        f.write(f"{name}\t{phrase}\n")
print(f"{len(expected)} malformed files")
