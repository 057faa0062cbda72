// posemb/table_analysis.hpp: what a position table's rows say about it: their norms, how similar
// they are (every pair, and on average by distance), and whether its leading rows look reserved.
// `posemb inspect`, the heatmaps of `posemb inspect --plot` and `posemb demo`, `posemb resize`
// and Python (posemb.row_norms, ...) all compute it here.
//
//   posemb::PositionTable t = posemb::load_position_table("gpt2.safetensors");
//   posemb::RowNormStats s = posemb::row_norm_stats(t.usable());      // min, mean, max, stddev
//   posemb::Matrix<float> sim = posemb::cosine_similarity(t.usable(), 4);  // (256, 256): rows 0,
//   4, ... for (auto [d, c] : posemb::distance_profile(t.usable()))          // d = 1, 2, 4, ...,
//   512
//     std::printf("%zu %.4f\n", d, c);                                 // mean cos(row i, row i +
//     d)
//   posemb::likely_reserved_rows(t.values);            // 2 for RoBERTa (row 1 all zeros), else 0
//   posemb::unstated_reserved_rows(t);                 // 2 when the file does not record them
//
// Every function reads its table and allocates its result; the results are the same bits for
// any thread count (sums in a fixed order; rows of the similarity matrix in parallel chunks
// that write disjoint cells).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/position_table_file.hpp"

namespace posemb {

// The Euclidean norm of every row of table (rows, dim), in double: result[r] = |row r|.
std::vector<double> row_norms(MatrixView<const float> table);

struct RowNormStats {
  double min = 0, mean = 0, max = 0, stddev = 0;  // all 0 for a table without rows
};
// The row norms' min, mean (their sum in row order over rows), max and population standard
// deviation, of table (rows, dim).
RowNormStats row_norm_stats(MatrixView<const float> table);

// The rows of table (rows, dim) scaled to unit length: (rows, dim), each row times the float
// nearest 1 / |row| (its norm in double); a zero row stays zero.
Matrix<float> unit_rows(MatrixView<const float> table);

// The cosine similarity of every pair of rows 0, step, 2 step, ... of table (rows, dim):
// (n, n), n = ceil(rows / step), symmetric, clamped to [-1, 1]. Each row is normalized in double
// (rounded to float), each dot product summed in float over 8 partial sums in a fixed order; a
// zero row has similarity 0 with everything. Throws std::invalid_argument for step 0.
Matrix<float> cosine_similarity(MatrixView<const float> table,  // (rows, dim)
                                std::size_t step = 1);

// One point of a distance profile: the mean cosine similarity of rows i and i + offset.
struct OffsetSimilarity {
  std::size_t offset = 0;
  double mean_cosine = 0;
};
// The distance profile of table (rows, dim): for offset d = 1, 2, 4, ... < rows, the mean over
// every i of cos(row i, row i + d), of the unit_rows (dot products as in cosine_similarity,
// summed over i in double). Empty for fewer than 2 rows.
std::vector<OffsetSimilarity> distance_profile(MatrixView<const float> table);

// How many leading rows likely_reserved_rows looks at.
inline constexpr std::size_t kReservedRowScan = 8;

// The number of leading rows of table (rows, dim) that look reserved rather than positions:
// 1 + the index of the last all-zero row among the first kReservedRowScan rows, provided some
// later row is not all zeros (RoBERTa's table: row 1, the padding row, is zeros: 2). 0 when
// there is no such row. A hint for a caller that was not told the reserved rows; the file's
// posemb.reserved_rows metadata or the caller's knowledge decide.
std::size_t likely_reserved_rows(MatrixView<const float> table);

// The one decision about unstated reserved rows: likely_reserved_rows(table.values) when nobody
// gave the table's reserved rows (caller_gave_them false and the file's posemb.reserved_rows did
// not: !table.reserved_rows_recorded) and that is more than table.reserved_rows; nullopt
// otherwise. A caller warns with it ("pass --reserved-rows K"), never acts on it silently.
std::optional<std::size_t> unstated_reserved_rows(const PositionTable& table,
                                                  bool caller_gave_them = false);

}  // namespace posemb
