// posemb/initializers.hpp: seeded, thread-count-independent initializers for a learned table.
//
//   posemb::Matrix<float> wpe(1024, 768);                                  // (max_seq_len, C)
//   posemb::initialize_table(wpe, {});                                     // N(0, 0.02), seed 0
//   posemb::initialize_table(wpe, posemb::Initializer::parse("glorot-uniform", 0.02, 7));
//
// Element k (row-major index) of the table is drawn from a counter-based generator keyed by
// (seed, k), so the values depend on the seed and the shape only, never on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "posemb/matrix_view.hpp"

namespace posemb {

// normal: N(0, std) (GPT-2: std 0.02, the default); scaled_normal: N(0, embed_dim^-1/2)
// (fairseq); glorot_uniform: U(-a, a), a = sqrt(6 / (rows + cols)) (keras); zeros;
// sinusoidal: sinusoidal_positional_encoding of the table's shape.
enum class InitKind { normal, scaled_normal, glorot_uniform, zeros, sinusoidal };

struct Initializer {
  InitKind kind = InitKind::normal;
  double stddev = 0.02;  // used by `normal` only
  std::uint64_t seed = 0;

  // names: "normal", "scaled-normal", "glorot-uniform", "zeros", "sinusoidal"; throws
  // std::invalid_argument listing the valid names.
  static Initializer parse(std::string_view name, double stddev = 0.02, std::uint64_t seed = 0);
  // The name parse() accepts for this kind; throws std::invalid_argument (naming the value)
  // when kind is no listed InitKind.
  std::string name() const;
};

// Fills table (rows, cols) deterministically from init.seed (written over). Throws
// std::invalid_argument, writing nothing, when init.kind is no listed InitKind (naming its
// value), or for `normal` when init.stddev is not finite, negative, or so large (over
// FLT_MAX / 8.66, about 3.9e37) that some values would not be finite in float (naming it).
void initialize_table(MatrixView<float> table,  // (rows, cols), written over
                      const Initializer& init);

}  // namespace posemb
