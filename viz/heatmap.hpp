// viz/heatmap.hpp: the one heatmap renderer (PNG): a matrix of values as coloured cells, with
// position ticks on both axes, a colour bar with its scale, a title and axis labels. Small
// matrices are scaled up (each cell a square of several pixels).
//
//   posemb::Matrix<float> sim = posemb::cosine_similarity(table);  // posemb/table_analysis.hpp
//   viz::HeatmapOptions o;
//   o.title = "cosine similarity of the learned table's rows";
//   std::string png = viz::heatmap_png(sim, o);                    // write it atomically
//
// Cell (i, j) shows values(i, j): row i from the top, column j from the left; tick labels are
// positions first_index + i * index_step. Colours: a diverging blue-white-red scale, vmin blue,
// (vmin + vmax) / 2 white, vmax red; values outside [vmin, vmax] take the end colours.
#pragma once

#include <cstddef>
#include <string>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::viz {

struct HeatmapOptions {
  std::string title;
  std::string x_label = "position";
  std::string y_label = "position";
  std::string scale_label = "cosine similarity";  // beside the colour bar
  double vmin = -1.0, vmax = 1.0;
  std::size_t first_index = 0;  // the position of row and column 0
  std::size_t index_step = 1;   // positions between neighbouring cells (a thinned table)
  int min_side = 480;  // a smaller matrix is scaled up by a whole factor to reach this many pixels
};

// The rendered PNG. Throws std::invalid_argument for an empty matrix, vmin >= vmax or
// index_step 0, std::runtime_error when the font is missing or encoding fails.
std::string heatmap_png(MatrixView<const float> values,  // (rows, cols)
                        const HeatmapOptions& options);

}  // namespace posemb::viz
