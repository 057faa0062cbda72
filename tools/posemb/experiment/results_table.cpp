#include "results_table.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"
#include "lab_options.hpp"
#include "posemb/errors.hpp"

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

void print_eval_header(const lab::EvalSession& s) {
  const auto& mc = s.model_config();
  const auto& task = s.run.task;
  const bool has_table = s.model.encoding_spec().has_table;
  const bool text = !task.corpus_identity.empty();
  fmt::print(
      "posemb eval: {} (pe {}{}{}, task {}{}, trained {} {})\n",
      quote_untrusted(s.request.checkpoint), mc.pe,
      has_table ? fmt::format(", {} table rows", mc.max_seq_len) : buckets_text(mc, ", ", ""),
      mc.rope_scaling.method != lab::rope_scaling_methods().front()
          ? ", rope scaling " + mc.rope_scaling.text()
          : "",
      task.kind, text ? " on " + task.corpus_identity.text() : "",
      text ? "at length" : "on n <=", task.train_len);
}

namespace {

// The loss by position bucket of each length scored on windows, when the rows are short enough
// to read (at most 16 buckets).
void print_buckets(const std::vector<lab::LengthResult>& rows, std::size_t bucket) {
  std::size_t widest = 0;
  for (const auto& l : rows) {
    if (!l.beyond_table) widest = std::max(widest, l.buckets.size());
  }
  if (widest == 0) return;
  if (widest > 16) {
    fmt::print("(bits per byte by position, in buckets of {}: buckets.csv)\n", bucket);
    return;
  }
  fmt::print("\nbits per byte by position in the windows, buckets of {} (non-overlapping):\n{:>7} ",
             bucket, "T");
  for (std::size_t b = 0; b < widest; ++b)
    fmt::print("| {:^11} ", fmt::format("[{},{})", b * bucket, (b + 1) * bucket));
  fmt::print("\n");
  for (const auto& l : rows) {
    if (l.beyond_table) continue;
    fmt::print("{:>7} ", l.length);
    for (const auto& b : l.buckets) fmt::print("| {:^11.3f} ", b.bits_per_token());
    fmt::print("\n");
  }
}

}  // namespace

void print_length_results(const lab::RunConfig& run, const std::vector<lab::LengthResult>& rows,
                          std::size_t table_rows) {
  const std::size_t L = run.task.train_len;
  if (std::none_of(rows.begin(), rows.end(), lab::scored_on_windows)) {
    print_results_table({{run.model.pe, rows}}, L, table_rows);
    return;
  }
  fmt::print(
      "\nbits per byte of the validation text by window length T (trained at T = {}; Press et "
      "al.'s non-overlapping windows, positions from 0 in each; sliding windows of stride S, "
      "each byte predicted once):\n{:>7} | {:^10} | {:^16} | {:>7} | {}\n",
      L, "T", "bits/byte", "sliding (S)", "bytes", "dropped (final partial window)");
  const std::size_t rows_of_table =
      lab::find_encoding(run.model.pe).has_table ? run.model.max_seq_len : table_rows;
  for (const auto& l : rows) {
    if (l.beyond_table) {
      fmt::print("{:>6}{} | beyond_table (the table's {} rows)\n", l.length,
                 l.length == L ? "*" : " ", rows_of_table);
      continue;
    }
    fmt::print("{:>6}{} | {:^10.4f} | {:>8.4f} ({:>5}) | {:>7} | {}\n", l.length,
               l.length == L ? "*" : " ", l.loss / std::numbers::ln2,
               l.sliding.loss / std::numbers::ln2, l.sliding.stride, l.counted, l.dropped);
  }
  fmt::print("(* = the training length)\n");
  print_buckets(rows, lab::train_tokens(run.task));
}

void print_eval_results(const lab::EvalSession& s) {
  const auto& mc = s.model_config();
  print_length_results(s.run, s.rows, s.model.encoding_spec().has_table ? mc.max_seq_len : 0);
}

void print_sweep_summary(const std::vector<lab::SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes) {
  std::size_t width = 3;
  for (const auto& p : points) width = std::max(width, p.run.name.size());
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>11}  {:>8}  {:>4}\n", "run", width, "in-dist", "beyond",
             "final loss", "train s", "rank");
  bool texts = false;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& o = outcomes[i];
    const std::size_t L = points[i].run.run.task.train_len;
    if (!o.error.empty()) {
      fmt::print("{:<{}}  failed: {}\n", points[i].run.name, width, o.error);
      continue;
    }
    auto cell = [](double v, const char* unit) {
      return std::isnan(v) ? std::string("-") : fmt::format("{:.3f}{}", v, unit);
    };
    const bool text =
        std::any_of(o.results.results.begin(), o.results.results.end(), lab::scored_on_windows);
    const auto mean = text ? lab::mean_bits_within : lab::mean_exact_within;
    const char* unit = text ? "b" : "";
    texts = texts || text;
    fmt::print("{:<{}}  {:>9}  {:>9}  {:>11.5f}  {:>8.1f}  {:>4}\n", points[i].run.name, width,
               cell(mean(o, 1, L), unit), cell(mean(o, L + 1, SIZE_MAX), unit), o.final_loss,
               o.results.train_seconds, o.rank);
  }
  fmt::print(
      "(in-dist: mean exact match over n <= train_len; beyond: over the longer evaluated n that "
      "fit the table{})\n",
      texts ? "; b: a text's bits per byte (non-overlapping windows) at T <= train_len and "
              "beyond, the mean over the evaluated lengths"
            : "");
}

}  // namespace posemb::cli
