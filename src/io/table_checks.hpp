// src/io/table_checks.hpp (internal): the checks every position table passes before it enters a
// computation (load_position_table, resize_table), in one place.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "posemb/matrix_view.hpp"

namespace posemb::detail {

// The (row, column) of the first NaN or infinity of table, if any.
inline std::optional<std::pair<std::size_t, std::size_t>> first_non_finite(
    MatrixView<const float> table) noexcept {
  for (std::size_t r = 0; r < table.rows(); ++r) {
    const auto row = table.row(r);
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (!std::isfinite(row[c])) return std::pair{r, c};
    }
  }
  return std::nullopt;
}

// "NaN at row 2, column 1" for the first non-finite element, or "" when all are finite.
inline std::string non_finite_description(MatrixView<const float> table) {
  const auto at = first_non_finite(table);
  if (!at) return {};
  const float v = table(at->first, at->second);
  return std::string(std::isnan(v) ? "NaN" : (v > 0 ? "+infinity" : "-infinity")) + " at row " +
         std::to_string(at->first) + ", column " + std::to_string(at->second);
}

}  // namespace posemb::detail
