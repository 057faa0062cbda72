// posemb/resize.hpp: longer or shorter position tables, made from a trained one.
//
//   posemb::PositionTable roberta = posemb::load_position_table("roberta.safetensors");
//   roberta.reserved_rows = 2;                                           // 514 rows, 512 positions
//   auto longer = posemb::resize_table(roberta, 4096, posemb::ResizeMethod::copy);
//   // longer.values: (2 + 4096, 768); rows 0-1 unchanged; position p = old position p % 512
//
// Methods (new_positions counts positions; the reserved rows are kept in place in addition):
//   copy         tile the trained positions (Longformer: position p = old position p % old)
//   interpolate  linear along the position axis, old positions [0, n-1] mapped onto [0, N-1]
//                (first and last positions kept exactly)
//   random       keep the old positions bit for bit, draw the new ones from N(0, std), seeded
//   truncate     keep the first new_positions positions (shrinking)
// copy, interpolate and random grow (new_positions >= positions()); truncate shrinks
// (new_positions <= positions()). The result's provenance records how it was made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "posemb/position_table_file.hpp"

namespace posemb {

enum class ResizeMethod : std::uint8_t { copy, interpolate, random, truncate };

// "copy", "interpolate", "random", "truncate".
std::string_view resize_method_name(ResizeMethod method) noexcept;
// The method called name; throws std::invalid_argument listing the four names otherwise.
ResizeMethod parse_resize_method(std::string_view name);

// Options of the random method.
struct ResizeOptions {
  std::string initializer = "normal";  // new rows: any Initializer::parse name
  double stddev = 0.02;                // its standard deviation (GPT-2's initializer range)
  std::uint64_t seed = 0;              // same seed, same rows
};

// A new table with new_positions positions made from table by method. Throws
// std::invalid_argument when the method does not fit the direction (growing vs shrinking),
// new_positions is 0, the options are invalid, or the table holds NaN or infinity (the message
// names the file, tensor, row and column).
PositionTable resize_table(const PositionTable& table, std::size_t new_positions,
                           ResizeMethod method, const ResizeOptions& options = {});

}  // namespace posemb
