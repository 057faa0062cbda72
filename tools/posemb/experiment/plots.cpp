#include "plots.hpp"

#include <algorithm>
#include <cmath>

#include "lab/config.hpp"
#include "posemb/table_analysis.hpp"
#include "viz/chart.hpp"
#include "viz/heatmap.hpp"

namespace posemb::cli {

std::string length_generalization_svg(const std::string& title, std::size_t train_len,
                                      const std::vector<EncodingRuns>& encodings) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "sequence length n (symbols in the instance)";
  c.y_label = "exact match (greedy decoding)";
  c.markers.push_back(
      {static_cast<double>(train_len), "training length n = " + std::to_string(train_len), ""});
  std::size_t longest = 0, seeds = 0;
  for (const auto& e : encodings) {
    seeds = std::max(seeds, e.runs.size());
    for (const auto* r : e.runs) {
      for (const auto& l : r->results) longest = std::max(longest, l.length);
    }
  }
  for (const auto& e : encodings) {
    if (e.runs.empty()) continue;
    viz::Series s;
    s.name = e.pe;
    for (const auto& ls : lab::spread_by_length(e.runs)) {
      s.x.push_back(static_cast<double>(ls.length));
      s.y.push_back(ls.beyond_table ? NAN : ls.exact.mean);
      s.lo.push_back(ls.beyond_table ? NAN : ls.exact.min);
      s.hi.push_back(ls.beyond_table ? NAN : ls.exact.max);
    }
    if (const auto rows = e.runs.front()->max_seq_len) {
      // A table of R rows holds instances of n <= (R - 2) / 2 (2n + 2 input tokens).
      const std::size_t last = *rows >= 2 ? (*rows - 2) / 2 : 0;
      const std::string what =
          "table of " + std::to_string(*rows) + " rows: n <= " + std::to_string(last);
      if (last < longest) {
        c.markers.push_back({static_cast<double>(last), e.pe + " " + what, e.pe});
      } else {
        s.name += " (" + what + ")";
      }
    }
    c.series.push_back(std::move(s));
  }
  c.note = (seeds > 1 ? "line: mean of " + std::to_string(seeds) +
                            " seeds\nshaded: lowest to highest seed\n"
                      : std::string()) +
           "gaps: n beyond the table";
  return viz::line_chart_svg(c);
}

std::string extension_svg(const std::string& title, std::size_t lo, std::size_t hi,
                          const std::vector<lab::ExtensionRun>& runs) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "fine-tuning steps at n <= " + std::to_string(hi);
  c.y_label = "exact match, mean over n = " + std::to_string(lo) + ".." + std::to_string(hi);
  std::vector<std::string> methods;
  for (const auto& r : runs) {
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
      methods.push_back(r.method);
    }
  }
  std::size_t seeds = 0;
  for (const auto& m : methods) {
    std::vector<std::vector<double>> curves;
    const lab::ExtensionRun* first = nullptr;
    for (const auto& r : runs) {
      if (r.method != m) continue;
      if (first == nullptr) first = &r;
      curves.push_back(lab::curve_mean_exact(r, lo, hi));
    }
    seeds = std::max(seeds, curves.size());
    viz::Series s;
    s.name = m;
    for (std::size_t k = 0; k < first->curve.size(); ++k) {
      std::vector<double> at;
      for (const auto& cv : curves) {
        if (k < cv.size()) at.push_back(cv[k]);
      }
      const lab::Spread sp = lab::spread_of(at);
      s.x.push_back(static_cast<double>(first->curve[k].first));
      s.y.push_back(sp.mean);
      s.lo.push_back(sp.min);
      s.hi.push_back(sp.max);
    }
    c.series.push_back(std::move(s));
  }
  c.note = seeds > 1
               ? "line: mean of " + std::to_string(seeds) + " seeds\nshaded: lowest to highest seed"
               : "";
  return viz::line_chart_svg(c);
}

std::string table_similarity_png(MatrixView<const float> table, const std::string& title) {
  viz::HeatmapOptions o;
  o.title = title;
  return viz::heatmap_png(cosine_similarity(table), o);
}

}  // namespace posemb::cli
