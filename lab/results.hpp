// lab/results.hpp: the experiment's outputs (the CLI writes them with
// posemb::write_file_atomically).
//
//   results.csv / results.json  accuracy by length for every run (results.json's schema is read
//                               by others: {"task", "train_len", "runs": [{"pe", "max_seq_len",
//                               "train_seconds", "results": [{"length", "status", "exact_match",
//                               "token_accuracy"}]}]})
//   length_generalization.svg   exact match vs length, one line per encoding, the training
//                               length and the learned table's last length marked
//   learned_table_similarity.png  cosine similarity between the rows of a trained table
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lab/evaluate.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::lab {

struct RunResults {
  std::string pe;
  std::optional<std::size_t> max_seq_len;  // rows of the learned table, if any
  double train_seconds = 0.0;
  std::vector<LengthResult> results;
};

std::string results_csv(const std::vector<RunResults>& runs);
std::string results_json(const std::string& task, std::size_t train_len,
                         const std::vector<RunResults>& runs);
// Hand-written SVG: exact-match accuracy (0..1) against n, one polyline per run (broken where a
// length is beyond the run's table), a dashed line at the training length and a dotted one at
// the longest n each learned table can hold ((rows - 2) / 2), when inside the plotted range.
std::string length_generalization_svg(const std::string& title, std::size_t train_len,
                                      const std::vector<RunResults>& runs);
// The (rows x rows) cosine-similarity matrix of table's rows, as a PNG (cell px per row, a
// blue-white-red scale for -1..1). Throws std::runtime_error when encoding fails.
std::string similarity_png(MatrixView<const float> table, int cell);

}  // namespace posemb::lab
