#include "plots.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "lab/config.hpp"
#include "lab/report/lm_results.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/table_analysis.hpp"
#include "viz/chart.hpp"
#include "viz/heatmap.hpp"

namespace posemb::cli {

std::string length_generalization_svg(const std::string& title, const lab::TaskSpec& task,
                                      std::size_t train_len,
                                      const std::vector<EncodingRuns>& encodings) {
  // A teacher-forced task (the text task): bits per token against the window length.
  const bool bits = task.scoring == lab::Scoring::teacher_forced;
  viz::LineChart c;
  c.title = title;
  c.log_x = bits;  // L, 2L, 4L, ...: evenly spaced
  c.x_label = bits ? "evaluation window length (tokens; a text's bytes; log scale)"
                   : "sequence length n (symbols in the instance)";
  c.y_label =
      bits ? "bits per token (a text's byte), teacher-forced" : "exact match (greedy decoding)";
  c.markers.push_back(
      {static_cast<double>(train_len),
       (bits ? "training length " : "training length n = ") + std::to_string(train_len), ""});
  std::size_t longest = 0, seeds = 0;
  double lowest = INFINITY;  // bits: the lowest value of any band
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
      const lab::Spread& v = bits ? ls.bits : ls.exact;
      s.y.push_back(ls.beyond_table ? NAN : v.mean);
      s.lo.push_back(ls.beyond_table ? NAN : v.min);
      s.hi.push_back(ls.beyond_table ? NAN : v.max);
      if (bits && !ls.beyond_table && std::isfinite(v.max)) c.y_max = std::max(c.y_max, v.max);
      if (bits && !ls.beyond_table && std::isfinite(v.min)) lowest = std::min(lowest, v.min);
    }
    if (const auto rows = e.runs.front()->max_seq_len) {
      // A table of R rows holds the lengths whose rows fit R tokens (the task's length rule).
      const std::size_t last = lab::longest_length_within(task, *rows);
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
  if (bits) {
    // The axis from the whole bit below the lowest value: the encodings' differences are tenths.
    c.y_max = std::ceil(c.y_max);
    if (std::isfinite(lowest)) c.y_min = std::min(std::floor(lowest), c.y_max - 1.0);
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
  c.panels = true;  // the methods' curves and bands run together: one panel each
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

std::string lm_extension_svg(const std::string& title, const std::vector<lab::ExtensionRun>& table,
                             const std::vector<lab::ExtensionRun>& rope, std::size_t train_len) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "fine-tuning steps at the extended length sL";
  c.y_label = "bits per byte at sL";
  c.panels = true;
  c.y_min = 0.0;
  c.y_max = 0.0;
  std::size_t seeds = 0;
  // One series per method (and factor): before any update and after the fine-tuning.
  const auto add = [&](const std::vector<lab::ExtensionRun>& runs, const std::string& prefix) {
    std::vector<std::pair<std::string, double>> keys;
    for (const auto& r : runs) {
      if (std::find(keys.begin(), keys.end(), std::pair{r.method, r.factor}) == keys.end()) {
        keys.emplace_back(r.method, r.factor);
      }
    }
    for (const auto& [method, factor] : keys) {
      const auto n = static_cast<std::size_t>(factor) * train_len;
      std::vector<double> before, after;
      std::size_t steps = 0;
      for (const auto& r : runs) {
        if (r.method != method || r.factor != factor) continue;
        before.push_back(lab::step0_bits(r, n));
        after.push_back(lab::after_bits(r, n));
        steps = r.steps;
      }
      seeds = std::max(seeds, before.size());
      viz::Series s;
      s.name = fmt::format("{}{} x{:g} (at {})", prefix, method, factor, n);
      for (const auto& [x, v] :
           {std::pair{0.0, before}, std::pair{static_cast<double>(steps), after}}) {
        const lab::Spread sp = lab::spread_of(v);
        s.x.push_back(x);
        s.y.push_back(sp.mean);
        s.lo.push_back(sp.min);
        s.hi.push_back(sp.max);
        if (std::isfinite(sp.max)) c.y_max = std::max(c.y_max, sp.max);
      }
      c.series.push_back(std::move(s));
    }
  };
  add(table, "table: ");
  add(rope, "rotary: ");
  c.y_max = std::max(1.0, std::ceil(c.y_max));
  c.note = "left: before any update (step 0)\nright: after fine-tuning" +
           (seeds > 1 ? "\nline: mean of " + std::to_string(seeds) +
                            " seeds\nshaded: lowest to highest seed"
                      : std::string());
  return viz::line_chart_svg(c);
}

namespace {

// The demo's chart files.
constexpr const char* kLengthChart = "length_generalization.svg";
constexpr const char* kExtensionChart = "extension.svg";
constexpr const char* kRopeChart = "rope_extension.svg";
constexpr const char* kTableHeatmap = "learned_table_similarity.png";
constexpr const char* kLmLengthChart = "lm_length.svg";
constexpr const char* kLmExtensionChart = "lm_extension.svg";

// The text demo's charts.
std::vector<std::pair<std::string, std::string>> lm_charts(const lab::DemoOutcome& out) {
  const auto& plan = out.plan;
  const auto& rep = out.report;
  const std::size_t L = plan.train_len;
  std::vector<EncodingRuns> enc;
  for (const auto& pe : plan.encodings) enc.push_back({pe, lab::runs_of(rep, pe)});
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(kLmLengthChart,
                     length_generalization_svg("text, trained at L = " + std::to_string(L) +
                                                   " bytes: bits per byte by evaluation length",
                                               lab::find_task(plan.options.task), L, enc));
  files.emplace_back(kLmExtensionChart,
                     lm_extension_svg("past L: the learned table extended to 2L, RoPE scaled to "
                                      "sL, before and after fine-tuning",
                                      rep.extension, rep.rope_extension, L));
  return files;
}
std::string extended_heatmap(const std::string& method) {
  return "extended_" + method + "_similarity.png";
}

}  // namespace

std::vector<std::string> demo_chart_names(const lab::DemoPlan& plan) {
  if (plan.language) return {kLmLengthChart, kLmExtensionChart};
  std::vector<std::string> names = {kLengthChart, kExtensionChart};
  if (!plan.rotary.empty()) names.emplace_back(kRopeChart);
  names.emplace_back(kTableHeatmap);
  for (const auto m : plan.methods)
    names.push_back(extended_heatmap(std::string(resize_method_name(m))));
  return names;
}

std::vector<std::pair<std::string, std::string>> demo_charts(const lab::DemoOutcome& out) {
  if (out.plan.language) return lm_charts(out);
  const auto& plan = out.plan;
  const auto& rep = out.report;
  const std::size_t L = plan.train_len, L2 = 2 * L;
  std::vector<EncodingRuns> enc;
  for (const auto& pe : plan.encodings) enc.push_back({pe, lab::runs_of(rep, pe)});
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(kLengthChart,
                     length_generalization_svg(plan.options.task + ", trained on n <= " +
                                                   std::to_string(L) + ": exact match by length",
                                               lab::find_task(plan.options.task), L, enc));
  files.emplace_back(kExtensionChart,
                     extension_svg("learned table extended from n <= " + std::to_string(L) +
                                       " to n <= " + std::to_string(L2) + ", then fine-tuned",
                                   L + 1, L2, rep.extension));
  if (!rep.rope_extension.empty()) {
    files.emplace_back(
        kRopeChart,
        extension_svg(plan.rotary + " trained on n <= " + std::to_string(L) +
                          ", run at n <= " + std::to_string(L2) + " with each scaling (factor " +
                          fmt::format("{:g}", plan.rope_factor) + "), then fine-tuned",
                      L + 1, L2, rep.rope_extension));
  }
  const auto& t0 = out.learned_table;
  files.emplace_back(kTableHeatmap, table_similarity_png(
                                        t0, fmt::format("learned table after training (seed {}, "
                                                        "{} rows x {}): cosine similarity of "
                                                        "positions",
                                                        plan.options.seed, t0.rows(), t0.cols())));
  for (const auto& [name, t] : out.extended_tables) {
    files.emplace_back(
        extended_heatmap(name),
        table_similarity_png(t,
                             fmt::format("extended by {} to {} rows, after {} fine-tuning "
                                         "steps (seed {})",
                                         name, t.rows(), plan.extension_steps, plan.options.seed)));
  }
  return files;
}

namespace {

std::string slug(const std::string& group) {
  std::string s;
  for (const char c : group) {
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  }
  return s;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> sweep_charts(
    const std::vector<lab::SweepPoint>& points, const std::vector<lab::GridOutcome>& outcomes) {
  // Groups in the grid's order; in each, encodings in the grid's order.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!members.count(points[i].group)) groups.push_back(points[i].group);
    members[points[i].group].push_back(i);
  }
  std::vector<std::pair<std::string, std::string>> charts;
  for (const auto& group : groups) {
    std::vector<std::string> pes;
    std::map<std::string, std::vector<std::size_t>> by_pe;
    for (const std::size_t i : members[group]) {
      if (!outcomes[i].error.empty()) continue;
      const auto& rs = points[i].rope_scaling;  // one line per scaling of rope
      const std::string pe = points[i].run.run.model.pe + (rs.empty() ? "" : " (" + rs + ")");
      if (!by_pe.count(pe)) pes.push_back(pe);
      by_pe[pe].push_back(i);
    }
    if (pes.empty()) continue;
    // One line per encoding: the mean over its seeds, a band from the lowest to the highest.
    std::vector<EncodingRuns> lines;
    for (const auto& pe : pes) {
      EncodingRuns line{pe, {}};
      for (const std::size_t i : by_pe[pe]) line.runs.push_back(&outcomes[i].results);
      lines.push_back(std::move(line));
    }
    const auto& first = points[members[group][0]];
    const std::size_t L = first.run.run.task.train_len;
    const lab::TaskSpec& task = lab::find_task(first.task);
    const bool bits = task.scoring == lab::Scoring::teacher_forced;
    const std::string title = (group.empty() ? first.task : group) +
                              (bits ? ", trained at length " : ", trained on n <= ") +
                              std::to_string(L) +
                              (bits ? ": bits per token by length" : ": exact match by length");
    const std::string file = group.empty() ? "length_generalization.svg"
                                           : "length_generalization_" + slug(group) + ".svg";
    charts.emplace_back(file, length_generalization_svg(title, task, L, lines));
  }
  return charts;
}

}  // namespace posemb::cli
