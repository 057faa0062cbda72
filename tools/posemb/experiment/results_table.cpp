#include "results_table.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace posemb::cli {

namespace {

// Whether length row i is beyond the table of every run (or missing from it).
bool beyond_everywhere(const std::vector<NamedResults>& runs, std::size_t i) {
  return std::all_of(runs.begin(), runs.end(), [i](const NamedResults& r) {
    return i >= r.second.size() || r.second[i].beyond_table;
  });
}

}  // namespace

void print_results_table(const std::vector<NamedResults>& runs, std::size_t train_len,
                         std::size_t table_rows) {
  if (runs.empty()) return;
  // The scorer's two columns (lab/eval/length_result.hpp), named in the title.
  lab::Scoring scoring = lab::Scoring::greedy;
  for (const auto& [name, rows] : runs) {
    if (!rows.empty()) scoring = rows.front().scoring;
  }
  fmt::print("\n{} by length n ({}; trained on n <= {}):\n",
             scoring == lab::Scoring::greedy ? "exact-match / per-token accuracy"
                                             : "loss (nats) / bits per token",
             scoring == lab::Scoring::greedy ? "greedy decoding" : "teacher-forced", train_len);
  fmt::print("{:>5} ", "n");
  for (const auto& [name, rows] : runs) fmt::print("| {:^21} ", name);
  fmt::print("\n");
  const auto& first = runs.front().second;
  for (std::size_t i = 0; i < first.size(); ++i) {
    std::size_t end = i;
    while (end < first.size() && beyond_everywhere(runs, end)) ++end;
    if (end - i >= 2) {
      const std::size_t fits = first[i].length - 1;
      fmt::print("n = {}..{}: beyond_table ({})\n", first[i].length, first[end - 1].length,
                 table_rows != 0 ? fmt::format("the table's {} rows hold n <= {}", table_rows, fits)
                                 : fmt::format("the table holds n <= {}", fits));
      i = end - 1;
      continue;
    }
    fmt::print("{:>5}{}", first[i].length, first[i].length == train_len ? "*" : " ");
    for (const auto& [name, rows] : runs) {
      if (i >= rows.size()) {
        fmt::print("| {:^21} ", "");
      } else if (rows[i].beyond_table) {
        fmt::print("| {:^21} ", "beyond_table");
      } else {
        const auto cols = lab::score_columns(rows[i].scoring);
        fmt::print("| {:>9.3f} / {:<9.3f} ", cols[0].value(rows[i]), cols[1].value(rows[i]));
      }
    }
    fmt::print("\n");
  }
  fmt::print("(* = the training length)\n");
}

void print_sweep_summary(const std::vector<lab::SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes) {
  std::size_t width = 3;
  for (const auto& p : points) width = std::max(width, p.run.name.size());
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>11}  {:>8}  {:>4}\n", "run", width, "in-dist", "beyond",
             "final loss", "train s", "rank");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& o = outcomes[i];
    const std::size_t L = points[i].run.run.task.train_len;
    if (!o.error.empty()) {
      fmt::print("{:<{}}  failed: {}\n", points[i].run.name, width, o.error);
      continue;
    }
    auto cell = [](double v) {
      return std::isnan(v) ? std::string("-") : fmt::format("{:.3f}", v);
    };
    fmt::print("{:<{}}  {:>9}  {:>9}  {:>11.5f}  {:>8.1f}  {:>4}\n", points[i].run.name, width,
               cell(lab::mean_exact_within(o, 1, L)),
               cell(lab::mean_exact_within(o, L + 1, SIZE_MAX)), o.final_loss,
               o.results.train_seconds, o.rank);
  }
  fmt::print(
      "(in-dist: mean exact match over n <= train_len; beyond: over the longer evaluated n that "
      "fit the table)\n");
}

}  // namespace posemb::cli
