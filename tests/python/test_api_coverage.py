"""Every public header is bound or deliberately left out, and the bindings handle every element
type and enum the headers declare. When the C++ API grows (a new header, a new element type
for a kernel, a new enum), this test names the binding file to extend."""
import re
from pathlib import Path

import posemb

ROOT = Path(__file__).resolve().parents[2]
HEADERS = ROOT / "include" / "posemb"

# header -> (binding file, the Python names it provides), or None with the reason it is not bound
COVERAGE = {
    "learned_positional_embedding.hpp": ("lookup.cpp", ["learned_positional_embedding"]),
    "sinusoidal.hpp": ("sinusoidal.cpp", ["sinusoidal_positional_encoding",
                                          "sinusoidal_positional_encoding_into"]),
    "rope.hpp": ("rope.cpp", ["rope_forward", "rope_backward"]),
    "rope_scaling.hpp": ("rope.cpp", ["rope_frequencies"]),
    "rope_config.hpp": ("rope.cpp", ["rope_frequencies", "rope_forward"]),  # config= (a dict)
    "rope_precision.hpp": ("rope.cpp", ["rope_angle_precision"]),
    "alibi.hpp": ("alibi.cpp", ["alibi_slopes", "alibi_forward", "alibi_backward"]),
    "relative_bias.hpp": ("relative_bias.cpp", ["t5_relative_bucket", "relative_bias_forward",
                                                "relative_bias_backward"]),
    "positions.hpp": ("positions.cpp", ["PositionSource", "resolve_positions"]),
    "embedding.hpp": ("embedding.cpp", ["embed_forward", "embed_backward",
                                        "add_positions_forward", "add_positions_backward"]),
    "layer.hpp": ("layer.cpp", ["LearnedPositionalEmbedding"]),
    "initializers.hpp": ("layer.cpp", ["initialize_table"]),
    "errors.hpp": ("errors.cpp", ["SequenceTooLong"]),
    "memory.hpp": ("module.cpp", ["MemoryLimitExceeded", "memory_limit", "set_memory_limit"]),
    "tensor_file.hpp": ("files.cpp", ["TensorFile", "FileFormatError"]),
    "safetensors.hpp": ("files.cpp", ["read_safetensors", "write_safetensors"]),
    "npy.hpp": ("files.cpp", ["read_npy", "write_npy"]),
    "position_table_file.hpp": ("files.cpp", ["PositionTable", "load_position_table",
                                              "save_position_table"]),
    "resize.hpp": ("files.cpp", ["resize_table"]),
    "table_analysis.hpp": ("analysis.cpp", ["row_norms", "row_norm_stats", "unit_rows",
                                            "cosine_similarity", "distance_profile",
                                            "likely_reserved_rows", "unstated_reserved_rows"]),
    "table_provenance.hpp": ("files.cpp", ["recorded_resizes"]),
    "version.hpp": ("module.cpp", ["__version__"]),
    "simd.hpp": ("module.cpp", ["simd_target", "simd_targets"]),
    "sincos_2d.hpp": ("vision.cpp", ["sincos_2d_position_table"]),
    "grid_resize.hpp": ("vision.cpp", ["interpolate_grid", "resize_grid", "vision_layout"]),
    "checkpoint_folder.hpp": ("vision.cpp", ["CheckpointFolder", "read_checkpoint_folder",
                                             "write_checkpoint_folder"]),
    "matrix.hpp": None,         # numpy arrays play the part of matrices and views
    "matrix_view.hpp": None,
    "half.hpp": None,           # numpy's float16 (the lookup takes it); numpy has no bfloat16
    "optimizers.hpp": None,     # PyTorch users have torch.optim; numpy users update in place
    "random.hpp": None,         # reached through the initializers
    "parallel.hpp": None,       # a policy inside the kernels
    "simd_dispatch.hpp": None,  # for C++ Highway kernels; Python picks the target with POSEMB_SIMD
    "atomic_file.hpp": None,    # reached through the file writers
    "digest.hpp": None,         # Python's hashlib.sha256 gives the same digest
    "read_file.hpp": None,      # Python reads files itself (open(path, "rb").read())
}

# Element types of the views each bound header takes, as the bindings handle them.
ELEMENT_TYPES = {
    "learned_positional_embedding.hpp": {"T"},  # float32, float64, float16 (lookup.cpp)
    "sinusoidal.hpp": {"float", "double"},
    "positions.hpp": {"TokenId", "std::int32_t", "std::int64_t", "std::uint8_t", "bool"},
    "rope.hpp": {"float"},
    "alibi.hpp": {"float"},
    "relative_bias.hpp": {"float"},
    # float16 tables in embed_forward; bfloat16 ones as int16/uint16 bits (bfloat16=True)
    "embedding.hpp": {"float", "TokenId", "bfloat16", "float16"},
    "layer.hpp": {"float", "TokenId"},
    "initializers.hpp": {"float"},
    "table_analysis.hpp": {"float"},
    "grid_resize.hpp": {"float"},
}

# Enumerations the bindings spell out (by name, from Python strings).
ENUMS = {"InitKind", "Kind", "ResizeMethod", "DType", "RopeLayout", "SinusoidalLayout",
         "SinusoidalFrequencies",
         "RopeScalingType",  # read by name from the config's rope_type
         "AngleFormat",  # rope_angle_precision's keys
         "RopePairTreatment",  # what `posemb rope` reports per pair; not returned to Python
         "AlibiForm",  # 'causal' / 'symmetric' (alibi.cpp)
         "GridMethod", "TableKind",  # vision.cpp: methods as strings; kinds behind vision_layout
         "TensorFileFormat"}  # read by content, never chosen: nothing to bind


def public_headers():
    return sorted(h.name.removesuffix(".in") for h in HEADERS.glob("*.hpp*")
                  if h.name != "posemb.hpp")


def test_every_public_header_is_bound_or_left_out_on_purpose():
    for header in public_headers():
        assert header in COVERAGE, (f"posemb/{header} is new: bind it in a file of its own under "
                                    "python/src/ (see bindings.hpp), or list it in COVERAGE")
    for header, binding in COVERAGE.items():
        assert (HEADERS / header).exists() or (HEADERS / (header + ".in")).exists(), header
        if binding is not None:
            source, names = binding
            assert (ROOT / "python" / "src" / source).exists(), source
            for name in names:
                assert hasattr(posemb, name), f"{name} ({header}, python/src/{source})"


def test_the_bindings_handle_every_element_type_the_headers_take():
    view = re.compile(r"MatrixView<(?:const )?([\w:]+)>")
    for header, handled in ELEMENT_TYPES.items():
        text = (HEADERS / header).read_text()
        types = set(view.findall(text))
        assert types <= handled, (f"posemb/{header} now takes views of {sorted(types - handled)}: "
                                  f"extend python/src/{COVERAGE[header][0]} and ELEMENT_TYPES")


def test_the_bindings_know_every_enum():
    enum = re.compile(r"enum class (\w+)")
    found = set()
    for header in public_headers():
        path = HEADERS / header
        if path.exists():
            found |= set(enum.findall(path.read_text()))
    assert found <= ENUMS, f"new enums {sorted(found - ENUMS)}: bind them (as strings), list them"
