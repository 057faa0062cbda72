"""posemb: learned positional embeddings for transformers, from Python.

The C++ library's operations on numpy arrays, without copies:

    import numpy as np, posemb
    table = np.random.default_rng(0).normal(0, 0.02, (1024, 768)).astype(np.float32)
    pe = posemb.learned_positional_embedding(128, table)        # rows [0, 128): a read-only view
    np.shares_memory(pe, table)                                  # True
    posemb.learned_positional_embedding(2000, table)             # raises posemb.SequenceTooLong

PyTorch modules on the same kernels are in posemb.torch (imported on demand). See
docs/python.md.
"""
from posemb._posemb import (
    FileFormatError,
    LearnedPositionalEmbedding,
    MemoryLimitExceeded,
    PositionSource,
    PositionTable,
    SequenceTooLong,
    TensorFile,
    __version__,
    add_positions_backward,
    add_positions_forward,
    cosine_similarity,
    distance_profile,
    alibi_backward,
    alibi_forward,
    alibi_slopes,
    embed_backward,
    embed_forward,
    initialize_table,
    learned_positional_embedding,
    likely_reserved_rows,
    load_position_table,
    memory_limit,
    read_npy,
    read_safetensors,
    recorded_resizes,
    resize_table,
    resolve_positions,
    rope_angle_precision,
    rope_backward,
    rope_forward,
    rope_frequencies,
    row_norm_stats,
    row_norms,
    save_position_table,
    set_memory_limit,
    simd_target,
    simd_targets,
    sinusoidal_positional_encoding,
    sinusoidal_positional_encoding_into,
    unit_rows,
    unstated_reserved_rows,
    write_npy,
    write_safetensors,
)

from posemb import rope  # noqa: E402  (posemb.rope.forward / backward)

__all__ = [
    "FileFormatError",
    "LearnedPositionalEmbedding",
    "MemoryLimitExceeded",
    "PositionSource",
    "PositionTable",
    "SequenceTooLong",
    "TensorFile",
    "__version__",
    "add_positions_backward",
    "add_positions_forward",
    "cosine_similarity",
    "distance_profile",
    "alibi_backward",
    "alibi_forward",
    "alibi_slopes",
    "embed_backward",
    "embed_forward",
    "initialize_table",
    "learned_positional_embedding",
    "likely_reserved_rows",
    "load_position_table",
    "memory_limit",
    "read_npy",
    "read_safetensors",
    "recorded_resizes",
    "resize_table",
    "resolve_positions",
    "rope",
    "rope_angle_precision",
    "rope_backward",
    "rope_forward",
    "rope_frequencies",
    "row_norm_stats",
    "row_norms",
    "save_position_table",
    "set_memory_limit",
    "simd_target",
    "simd_targets",
    "sinusoidal_positional_encoding",
    "sinusoidal_positional_encoding_into",
    "unit_rows",
    "unstated_reserved_rows",
    "write_npy",
    "write_safetensors",
]

# Vision tables as 2-D grids and Hugging Face checkpoint folders (python/src/vision.cpp).
from posemb._posemb import (  # noqa: E402
    CheckpointFolder,
    interpolate_grid,
    read_checkpoint_folder,
    resize_grid,
    sincos_2d_position_table,
    vision_layout,
    write_checkpoint_folder,
)

__all__ += [
    "CheckpointFolder",
    "interpolate_grid",
    "read_checkpoint_folder",
    "resize_grid",
    "sincos_2d_position_table",
    "vision_layout",
    "write_checkpoint_folder",
]

# T5's relative position bias: its buckets, the bias and its gradient (python/src/relative_bias.cpp).
from posemb._posemb import (  # noqa: E402
    relative_bias_backward,
    relative_bias_forward,
    t5_relative_bucket,
)

__all__ += [
    "relative_bias_backward",
    "relative_bias_forward",
    "t5_relative_bucket",
]

# TypeErrors from the extension name the argument of the wrong type (python/posemb/_arguments.py).
from posemb._arguments import name_the_arguments as _name_the_arguments  # noqa: E402

_name_the_arguments(globals())
