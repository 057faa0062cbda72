// tools/posemb/table_report.hpp: what `posemb inspect` computes about a position table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/position_table_file.hpp"

namespace posemb::cli {

struct RowNormStats {
  double min = 0, mean = 0, max = 0, stddev = 0;
};

// Euclidean norms of the rows of table (rows, dim): min, mean, max, standard deviation.
RowNormStats row_norm_stats(MatrixView<const float> table);

// Rows scaled to unit length (a zero row stays zero), shape (rows, dim).
Matrix<float> unit_rows(MatrixView<const float> table);

// Mean cosine similarity of rows i and i + d over every i, for d = 1, 2, 4, ... < rows.
std::vector<std::pair<std::size_t, double>> mean_cosine_by_distance(MatrixView<const float> unit);

// The (n, n) cosine-similarity heatmap of rows 0, step, 2 step, ... (n = ceil(rows / step)),
// drawn by viz::heatmap_png (blue -1, white 0, red +1, position ticks, a colour bar), written
// to path atomically. Returns n.
std::size_t write_cosine_heatmap(MatrixView<const float> unit, std::size_t step,
                                 const std::string& path);

// Prints "posemb: warning: TEXT" on stderr (a warning is not an error: the command goes on).
void warn(const std::string& text);

// When nobody gave the table's reserved rows (no --reserved-rows flag, no posemb.reserved_rows
// metadata) while its leading rows look reserved (likely_reserved_rows): "row 1 of 'name' is all
// zeros, so its first 2 rows look reserved (...) and the file does not say". "" otherwise.
std::string looks_reserved(const PositionTable& table, bool flag_given);

// The line explaining that a (1, N, C) table was read as (N, C) and is written back in its
// stored form, or "" for a 2-D table.
std::string squeeze_note(const PositionTable& table);

}  // namespace posemb::cli
