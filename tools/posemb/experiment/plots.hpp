// tools/posemb/plots.hpp: the experiment's plots, drawn with the renderer in viz/.
//
//   length_generalization.svg     exact match against n, one line per encoding (broken where n
//                                 is beyond the table), the training length and each table's
//                                 last n marked
//   learned_table_similarity.png  cosine similarity between every pair of rows of a table
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/results.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::cli {

// The SVG of exact match by length n for runs trained on n <= train_len.
std::string length_generalization_svg(const std::string& title, std::size_t train_len,
                                      const std::vector<lab::RunResults>& runs);
// The PNG heatmap of the cosine similarity between the rows of a learned table.
std::string table_similarity_png(MatrixView<const float> table,  // (rows, dim)
                                 const std::string& title);

}  // namespace posemb::cli
