// posemb/posemb.hpp: the umbrella header; includes every public posemb header.
//
//   #include <posemb/posemb.hpp>
//   posemb::Matrix<float> table(1024, 768);                           // (max_seq_len, dim)
//   auto rows = posemb::learned_positional_embedding(128, table);     // (128, 768), zero-copy
//   auto pe = posemb::sinusoidal_positional_encoding(4096, 768);      // any length
#pragma once

#include "posemb/alibi.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/digest.hpp"
#include "posemb/embedding.hpp"
#include "posemb/errors.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/half.hpp"
#include "posemb/initializers.hpp"
#include "posemb/layer.hpp"
#include "posemb/learned_positional_embedding.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/memory.hpp"
#include "posemb/npy.hpp"
#include "posemb/optimizers.hpp"
#include "posemb/parallel.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/positions.hpp"
#include "posemb/random.hpp"
#include "posemb/read_file.hpp"
#include "posemb/relative_bias.hpp"
#include "posemb/resize.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_config.hpp"
#include "posemb/rope_precision.hpp"
#include "posemb/rope_scaling.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/simd.hpp"
#include "posemb/simd_dispatch.hpp"
#include "posemb/sincos_2d.hpp"
#include "posemb/sinusoidal.hpp"
#include "posemb/table_analysis.hpp"
#include "posemb/table_provenance.hpp"
#include "posemb/tensor_file.hpp"
#include "posemb/version.hpp"
