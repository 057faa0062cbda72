"""Arguments of the wrong kind, through every binding: a big-endian array is refused saying
big-endian (not "got float32"), and an argument of the wrong Python type (a non-string tensor
name, a list for an array, ...) is named in one line, not pybind11's "incompatible function
arguments" or "Unable to cast Python instance"."""
import re

import numpy as np
import pytest

import posemb

B, T, C, V, L = 2, 3, 4, 5, 8
TOKENS = np.array([[0, 1, 2], [3, 4, 0]], np.int32)
S = posemb.PositionSource
LPE = posemb.LearnedPositionalEmbedding


def f32(*shape):
    return np.random.default_rng(0).normal(0, 1, shape).astype(np.float32)


# binding -> (a call taking its arrays by name, valid arrays); every array argument of every
# binding (the completeness test below keeps this list whole)
CALLS = {
    "learned_positional_embedding": (lambda a: posemb.learned_positional_embedding(2, a["table"]),
                                     {"table": f32(L, C)}),
    "embed_forward": (lambda a: posemb.embed_forward(a["tokens"], a["wte"], a["wpe"],
                                                     out=a["out"]),
                      {"tokens": TOKENS, "wte": f32(V, C), "wpe": f32(L, C), "out": f32(B, T, C)}),
    "embed_backward": (lambda a: posemb.embed_backward(a["dwte"], a["dwpe"], a["dout"],
                                                       a["tokens"]),
                       {"dwte": f32(V, C), "dwpe": f32(L, C), "dout": f32(B, T, C),
                        "tokens": TOKENS}),
    "add_positions_forward": (lambda a: posemb.add_positions_forward(a["x"], a["wpe"]),
                              {"x": f32(B, T, C), "wpe": f32(L, C)}),
    "add_positions_backward": (lambda a: posemb.add_positions_backward(a["dwpe"], a["dx"]),
                               {"dwpe": f32(L, C), "dx": f32(B, T, C)}),
    "PositionSource.explicit_ids": (lambda a: S.explicit_ids(a["ids"]),
                                    {"ids": np.zeros((B, T), np.int64)}),
    "PositionSource.padding_mask": (lambda a: S.padding_mask(a["mask"]),
                                    {"mask": np.ones((B, T), np.int32)}),
    "PositionSource.packed": (lambda a: S.packed(a["tokens"], 0), {"tokens": TOKENS}),
    "alibi_forward": (lambda a: posemb.alibi_forward(a["scores"], a["slopes"]),
                      {"scores": f32(1, 2, 3, 3), "slopes": np.ones(2, np.float32)}),
    "alibi_backward": (lambda a: posemb.alibi_backward(a["dscores"], a["dslopes"]),
                       {"dscores": f32(1, 2, 3, 3), "dslopes": np.zeros(2, np.float32)}),
    "relative_bias_forward": (lambda a: posemb.relative_bias_forward(a["table"], 3, 4,
                                                                     out=a["out"]),
                              {"table": f32(32, 2), "out": f32(2, 3, 4)}),
    "relative_bias_backward": (lambda a: posemb.relative_bias_backward(a["dbias"], 32,
                                                                       dtable=a["dtable"]),
                               {"dbias": f32(2, 3, 4), "dtable": f32(32, 2)}),
    "cosine_similarity": (lambda a: posemb.cosine_similarity(a["table"]), {"table": f32(L, C)}),
    "distance_profile": (lambda a: posemb.distance_profile(a["table"]), {"table": f32(L, C)}),
    "initialize_table": (lambda a: posemb.initialize_table(a["table"]), {"table": f32(L, C)}),
    "interpolate_grid": (lambda a: posemb.interpolate_grid(a["grid"], (2, 2), (3, 3)),
                         {"grid": f32(4, C)}),
    "likely_reserved_rows": (lambda a: posemb.likely_reserved_rows(a["table"]),
                             {"table": f32(L, C)}),
    "rope_forward": (lambda a: posemb.rope_forward(a["x"], "half"), {"x": f32(1, 3, 2, 4)}),
    "rope_backward": (lambda a: posemb.rope_backward(a["dx"], "half"), {"dx": f32(1, 3, 2, 4)}),
    "row_norm_stats": (lambda a: posemb.row_norm_stats(a["table"]), {"table": f32(L, C)}),
    "row_norms": (lambda a: posemb.row_norms(a["table"]), {"table": f32(L, C)}),
    "sinusoidal_positional_encoding_into": (
        lambda a: posemb.sinusoidal_positional_encoding_into(a["out"]), {"out": f32(L, C)}),
    "unit_rows": (lambda a: posemb.unit_rows(a["table"]), {"table": f32(L, C)}),
    "write_npy": (lambda a: posemb.write_npy(a["path"] + "/x.npy", a["array"]),
                  {"array": f32(L, C)}),
    "write_safetensors": (lambda a: posemb.write_safetensors(a["path"] + "/x.safetensors",
                                                             {"t": a["t"]}), {"t": f32(L, C)}),
    "PositionTable.__init__": (lambda a: posemb.PositionTable(a["values"]),
                               {"values": f32(L, C)}),
    "LearnedPositionalEmbedding.from_table": (lambda a: LPE.from_table(a["table"]),
                                              {"table": f32(L, C)}),
    "LearnedPositionalEmbedding.forward_add": (lambda a: LPE(L, C).forward_add(a["x"]),
                                               {"x": f32(B, T, C)}),
    "LearnedPositionalEmbedding.backward_add": (lambda a: LPE(L, C).backward_add(a["dx"]),
                                                {"dx": f32(B, T, C)}),
}


def extension_signatures():
    """(qualified name, first docstring line) of every public function, method, constructor and
    property setter of the extension."""
    out = []
    for name in sorted(n for n in dir(posemb) if not n.startswith("_")):
        value = getattr(posemb, name)
        if callable(value) and not isinstance(value, type):
            out.append((name, (value.__doc__ or "").split("\n")[0]))
        if isinstance(value, type) and type(value).__name__ == "pybind11_type":
            for attr, member in vars(value).items():
                fn = member.fset if isinstance(member, property) else getattr(member, "__func__",
                                                                               member)
                if fn is not None and (attr == "__init__" or not attr.startswith("__") or
                                       attr in ("__getitem__", "__contains__")):
                    doc = getattr(fn, "__doc__", "") or ""
                    out.append((f"{name}.{attr}", doc.split("\n")[0]))
    return out


def test_every_binding_taking_arrays_is_listed():
    for name, doc in extension_signatures():
        params = doc.split("->")[0]
        if "numpy.ndarray" in params and not name.startswith(("read_", "TensorFile")):
            assert name in CALLS, f"{name} takes arrays: add it to CALLS ({doc})"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_big_endian_arrays_are_refused_saying_big_endian(name, tmp_path):
    call, arrays = CALLS[name]
    call({**{k: v.copy() for k, v in arrays.items()}, "path": str(tmp_path)})  # valid as given
    for arg in arrays:
        given = {k: v.copy() for k, v in arrays.items()}
        given[arg] = given[arg].astype(given[arg].dtype.newbyteorder(">"))
        before = given[arg].tobytes()
        with pytest.raises(TypeError) as e:
            call({**given, "path": str(tmp_path / "be")})
        msg = str(e.value)
        native = given[arg].dtype.newbyteorder("=").name
        assert f"{arg} " in msg and f"big-endian {native}" in msg, msg
        assert "\n" not in msg
        assert given[arg].tobytes() == before
    assert not (tmp_path / "be").exists()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_empty_arrays_are_not_refused_for_their_layout(name, tmp_path):
    # numpy gives an array without elements zero strides; whatever a binding says about one
    # (an empty batch, no rows, ... or nothing: it is valid), it is not its layout.
    call, arrays = CALLS[name]
    for arg in arrays:
        for axis in range(arrays[arg].ndim):
            given = {k: v.copy() for k, v in arrays.items()}
            given[arg] = np.zeros(tuple(0 if i == axis else n
                                        for i, n in enumerate(given[arg].shape)),
                                  given[arg].dtype)
            try:
                call({**given, "path": str(tmp_path)})
            except Exception as e:  # noqa: BLE001 -- any refusal, as long as it is not the layout
                msg = str(e)
                assert "ascontiguousarray" not in msg and "strides" not in msg, (arg, axis, msg)


def table_file(tmp_path):
    path = str(tmp_path / "t.safetensors")
    posemb.write_safetensors(path, {"wpe.weight": f32(L, C)})
    return path


WRONG_TYPES = [
    # (call(path to a valid table file), message)
    (lambda p: posemb.load_position_table(p, 5),
     "load_position_table: tensor_name must be a str or None, got int 5"),
    (lambda p: posemb.read_checkpoint_folder(p, tensor_name=["wpe"]),
     "read_checkpoint_folder: tensor_name must be a str or None, got list ['wpe']"),
    (lambda p: posemb.read_safetensors(p)[5],
     "TensorFile.__getitem__: name must be a str, got int 5"),
    (lambda p: 5 in posemb.read_safetensors(p), "TensorFile.__contains__: name must be a str"),
    (lambda p: posemb.read_safetensors(p).shape(None), "TensorFile.shape: name must be a str"),
    (lambda p: posemb.read_safetensors(p).dtype(1.5), "TensorFile.dtype: name must be a str"),
    (lambda p: posemb.read_safetensors(7), "read_safetensors: path must be a str, got int 7"),
    (lambda p: posemb.write_npy(None, f32(2, 2)), "write_npy: path must be a str, got NoneType"),
    (lambda p: posemb.write_safetensors(p + "2", {"t": f32(2, 2)}, {"k": 5}),
     "write_safetensors: metadata must be a dict of str names to str values"),
    (lambda p: posemb.write_safetensors(p + "2", {7: f32(2, 2)}), "got the int 7 as a name"),
    (lambda p: posemb.row_norms([[1.0, 2.0]]), "row_norms: table must be a numpy array, got list"),
    (lambda p: posemb.initialize_table(f32(2, 2), init=3),
     "initialize_table: init must be a str, got int 3"),
    (lambda p: posemb.rope_forward(f32(1, 2, 1, 4), 0), "rope_forward: layout must be a str"),
    (lambda p: posemb.alibi_forward(f32(1, 1, 2, 2), form=1), "alibi_forward: form must be a str"),
    (lambda p: posemb.PositionSource.contiguous("a"),
     "PositionSource.contiguous: start must be an int, got str 'a'"),
    (lambda p: posemb.LearnedPositionalEmbedding(8, "x"),
     "LearnedPositionalEmbedding: embed_dim must be an int, got str 'x'"),
    (lambda p: setattr(posemb.load_position_table(p), "source_tensor", 3),
     "PositionTable.source_tensor must be a str, got int 3"),
    (lambda p: setattr(posemb.load_position_table(p), "reserved_rows", "x"),
     "PositionTable.reserved_rows must be an int, got str 'x'"),
    (lambda p: posemb.save_position_table(p + "2", "table"),
     None),  # a class argument: pybind11's own message (not judged), still a TypeError
]


@pytest.mark.parametrize("case", range(len(WRONG_TYPES)))
def test_wrong_argument_types_are_named_in_one_line(case, tmp_path):
    call, expected = WRONG_TYPES[case]
    path = table_file(tmp_path)
    with pytest.raises(TypeError) as e:
        call(path)
    msg = str(e.value)
    if expected is not None:
        assert expected in msg and "\n" not in msg, msg
        assert "incompatible" not in msg and "Unable to cast" not in msg, msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.safetensors"]


OUT_OF_RANGE = [
    # (call, message): an int the C++ integer (a count, an offset) cannot hold
    (lambda: posemb.alibi_slopes(-1), "alibi_slopes: n_heads must be >= 0, got -1"),
    (lambda: S.contiguous(-5), "PositionSource.contiguous: start must be >= 0, got -5"),
    (lambda: S.contiguous(2**64), "PositionSource.contiguous: start must be below 2**64"),
    (lambda: LPE(-1, 8), "LearnedPositionalEmbedding: max_seq_len must be >= 0, got -1"),
    (lambda: posemb.learned_positional_embedding(2, f32(L, C), start=-1),
     "learned_positional_embedding: start must be >= 0, got -1"),
]


@pytest.mark.parametrize("case", range(len(OUT_OF_RANGE)))
def test_ints_out_of_range_are_value_errors_naming_the_argument(case):
    call, expected = OUT_OF_RANGE[case]
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    assert expected in msg and "\n" not in msg, msg


def test_every_extension_function_with_a_signature_is_wrapped():
    signature = re.compile(r"^\w*\(.*\) -> ")
    for name, doc in extension_signatures():
        if not signature.match(doc):
            continue  # overloads: pybind11's message, which lists them
        owner, _, attr = name.partition(".")
        value = getattr(posemb, owner)
        if attr:
            member = vars(value)[attr]
            value = member.fset if isinstance(member, property) else member
        assert hasattr(value, "__wrapped__"), name
