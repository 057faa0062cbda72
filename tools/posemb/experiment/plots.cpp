#include "plots.hpp"

#include <cmath>

#include "lab/config.hpp"
#include "viz/chart.hpp"
#include "viz/heatmap.hpp"

namespace posemb::cli {

std::string length_generalization_svg(const std::string& title, std::size_t train_len,
                                      const std::vector<lab::RunResults>& runs) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "sequence length n (symbols to copy)";
  c.y_label = "exact-match accuracy (greedy)";
  c.markers.push_back(
      {static_cast<double>(train_len), "training length n = " + std::to_string(train_len), ""});
  std::size_t longest = 0;
  for (const auto& r : runs) {
    for (const auto& l : r.results) longest = std::max(longest, l.length);
  }
  for (const auto& r : runs) {
    viz::Series s;
    s.name = r.pe;
    for (const auto& l : r.results) {
      s.x.push_back(static_cast<double>(l.length));
      s.y.push_back(l.beyond_table ? NAN : l.exact_match);
    }
    if (r.max_seq_len) {
      // A table of R rows holds instances of n <= (R - 2) / 2 (2n + 2 input tokens).
      const std::size_t rows = *r.max_seq_len, last = rows >= 2 ? (rows - 2) / 2 : 0;
      const std::string what =
          "table of " + std::to_string(rows) + " rows: n <= " + std::to_string(last);
      if (last < longest) {
        c.markers.push_back({static_cast<double>(last), r.pe + " " + what, r.pe});
      } else {
        s.name += " (" + what + ")";
      }
    }
    c.series.push_back(std::move(s));
  }
  c.note = "gaps: n beyond the table (no row for its positions)";
  return viz::line_chart_svg(c);
}

std::string table_similarity_png(MatrixView<const float> table, const std::string& title) {
  viz::HeatmapOptions o;
  o.title = title;
  return viz::heatmap_png(viz::cosine_similarity(table), o);
}

}  // namespace posemb::cli
