// The demo's summary.md (lab/report/summary.hpp).
#include "lab/report/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "lab/encodings/registry.hpp"
#include "lab/report/summary_numbers.hpp"

namespace posemb::lab {
namespace {

using namespace summary_numbers;

// The seeds of rep's runs, "1, 2, 3".
std::string seed_list(const DemoReport& rep) {
  std::vector<std::uint64_t> seeds;
  for (const auto& r : rep.runs) {
    if (r.seed && std::find(seeds.begin(), seeds.end(), *r.seed) == seeds.end()) {
      seeds.push_back(*r.seed);
    }
  }
  std::sort(seeds.begin(), seeds.end());
  std::string seed_text;
  for (auto s : seeds) seed_text += (seed_text.empty() ? "" : ", ") + std::to_string(s);
  return seed_text;
}

// The encodings of rep's runs, in the order of their first run.
std::vector<std::string> encoding_order(const DemoReport& rep) {
  std::vector<std::string> order;
  for (const auto& r : rep.runs) {
    if (std::find(order.begin(), order.end(), r.pe) == order.end()) order.push_back(r.pe);
  }
  return order;
}

// The title and the settings.
void write_intro(std::ostringstream& o, const DemoReport& rep) {
  const std::size_t L = rep.task.train_len;
  const std::string seed_text = seed_list(rep);
  o << "# posemb demo: published results beside this run's\n\n";
  if (rep.quick) {
    o << "**A quick run** (`posemb demo --quick`): a smoke test of the pipeline at a fraction of "
         "the budget. A claim it meets is marked reproduced; one it does not is \"not judged "
         "(quick run)\": run `posemb demo` without --quick to judge it.\n\n";
  }
  o << "Task: `" << rep.task.kind << "` over " << rep.task.alphabet
    << " symbols, trained on n <= " << L << " (L = " << L << "); " << rep.model << "; "
    << rep.training << "; seeds " << seed_text << "; greedy decoding, " << rep.samples
    << " instances per length, exact match = every answer token right. Numbers are the mean "
       "over seeds, with [min, max] over seeds.\n\n";
}

// The claims table and the rules of its verdicts.
void write_claims(std::ostringstream& o, const DemoReport& rep) {
  o << "| published claim | published numbers | this run | verdict |\n|---|---|---|---|\n";
  const auto claims = judge_claims(rep);
  for (const auto& c : claims) {
    o << "| " << c.claim << " | " << c.published << " | " << c.measured << " | "
      << verdict(c.reproduced, rep.quick) << " |\n";
  }
  o << "\nHow each verdict is decided, from this run's numbers (the rules are fixed in "
       "lab/report/claims.cpp, the verdicts are not):\n\n";
  for (const auto& c : claims) {
    o << "- " << c.claim.substr(0, c.claim.find(':')) << ": reproduced when " << c.rule << ".\n";
  }
}

// Per encoding: exact match in distribution, just past L and as far as its table reaches.
void write_encoding_table(std::ostringstream& o, const DemoReport& rep,
                          const std::vector<std::string>& order) {
  const std::size_t L = rep.task.train_len;
  std::size_t top = 0;
  for (const auto& r : rep.runs) {
    for (const auto& l : r.results) top = std::max(top, l.length);
  }
  o << "\n## Exact match by encoding\n\n";
  o << "| encoding | table | in distribution, " << range(1, L) << " | just past L, "
    << range(L + 1, std::min(L + 3, top))
    << " | past L, as far as the table reaches | training seconds per run |\n"
       "|---|---|---|---|---|---|\n";
  for (const auto& pe : order) {
    const auto runs = runs_of(rep, pe);
    const auto e = numbers(rep, pe);
    std::vector<double> secs;
    for (const auto* r : runs) secs.push_back(r->train_seconds);
    const auto& first = *runs.front();
    std::string table = "none (computed)";
    if (first.max_seq_len) {
      table = std::to_string(*first.max_seq_len) + " rows";
    }
    if (find_encoding(pe).site == EncodingSite::nowhere) table = "none (no encoding)";
    const std::string beyond = "beyond the table (no rows)";
    o << "| " << pe << " | " << table << " | " << spread_text(e.in) << " | "
      << (e.near.empty() ? beyond : spread_text(e.near)) << " | "
      << (e.far.empty() ? beyond : spread_text(e.far) + " (" + range(L + 1, e.far_end) + ")")
      << " | " << spread_text(secs, 1) << " |\n";
  }
}

// One row per method of runs: a first column (first_header, first(method)), the mean exact
// match over lo..hi at up to 6 points of the curve (the first, the last, evenly spaced ones
// between), and the exact match over n = 1..L after fine-tuning.
template <typename First>
void write_curve_table(std::ostringstream& o, const std::vector<ExtensionRun>& runs, std::size_t L,
                       std::size_t lo, std::size_t hi, const std::string& method_header,
                       const std::string& first_header, First first) {
  const auto& curve = runs.front().curve;
  std::vector<std::size_t> cols;
  const std::size_t want = std::min<std::size_t>(6, curve.size());
  for (std::size_t k = 0; k < want; ++k) {
    cols.push_back(want == 1 ? 0 : k * (curve.size() - 1) / (want - 1));
  }
  o << "| " << method_header << " | " << first_header << " |";
  for (std::size_t i : cols) o << " step " << curve[i].first << " |";
  o << " after, " << range(1, L) << " |\n|---|---|";
  for (std::size_t i = 0; i <= cols.size(); ++i) o << "---|";
  o << "\n";
  for (const auto& m : methods_of(runs)) {
    o << "| " << m << " | " << first(m) << " |";
    for (std::size_t i : cols) o << " " << spread_text(curve_point(runs, m, i, lo, hi)) << " |";
    o << " " << spread_text(after_means(runs, m, 1, L)) << " |\n";
  }
}

// The learned table extension's curve: exact match past L while fine-tuning, per method.
void write_extension(std::ostringstream& o, const DemoReport& rep) {
  const std::size_t L = rep.task.train_len;
  const std::size_t L2 = rep.extended_train_len;
  o << "\n## Extending the learned table: exact match over " << range(L + 1, L2)
    << " while fine-tuning\n\n";
  o << rep.extension_training << ".\n\n";
  write_curve_table(
      o, rep.extension, L, L + 1, L2, "new rows by", "loss of the first batch",
      [&](const std::string& m) { return spread_text(first_losses(rep.extension, m)); });
}

// RoPE's: exact match over 1..2L before fine-tuning, then past L while fine-tuning, per scaling;
// and the best scaling after fine-tuning.
void write_rope_extension(std::ostringstream& o, const DemoReport& rep) {
  const std::size_t L = rep.task.train_len;
  const std::size_t L2 = rep.extended_train_len;
  const auto& runs = rep.rope_extension;
  o << "\n## Extending RoPE: exact match over " << range(L + 1, L2)
    << " while fine-tuning with each scaling\n\n";
  o << rep.rope_extension_training << ".\n\n";
  write_curve_table(
      o, runs, L, L + 1, L2, "scaling", "before fine-tuning, " + range(1, L2),
      [&](const std::string& m) { return spread_text(curve_point(runs, m, 0, 1, L2)); });
  std::string best;
  double best_mean = -1.0;
  for (const auto& m : methods_of(runs)) {
    const double v = mean(after_means(runs, m, L + 1, L2));
    if (v > best_mean) best = m, best_mean = v;
  }
  o << "\nBest after fine-tuning, mean exact match over " << range(L + 1, L2) << ": " << best << " "
    << spread_text(after_means(runs, best, L + 1, L2)) << ".\n";
}

// Exact match by length, one column per encoding.
void write_by_length(std::ostringstream& o, const DemoReport& rep,
                     const std::vector<std::string>& order) {
  const std::size_t L = rep.task.train_len;
  o << "\n## Exact match by length, mean over seeds\n\n| n |";
  std::vector<std::vector<LengthSpread>> by_len;
  for (const auto& pe : order) {
    o << " " << pe << " |";
    by_len.push_back(spread_by_length(runs_of(rep, pe)));
  }
  o << "\n|---:|";
  for (std::size_t i = 0; i < order.size(); ++i) o << "---|";
  o << "\n";
  for (std::size_t i = 0; !by_len.empty() && i < by_len.front().size(); ++i) {
    const std::size_t n = by_len.front()[i].length;
    o << "| " << n << (n == L ? " (L)" : "") << " |";
    for (const auto& col : by_len) {
      o << " "
        << (i >= col.size()       ? ""
            : col[i].beyond_table ? "beyond table"
                                  : fixed(col[i].exact.mean, 2))
        << " |";
    }
    o << "\n";
  }
}

// The files written and the wall time.
void write_files(std::ostringstream& o, const DemoReport& rep) {
  o << "\n## Files\n\n"
       "`results.csv`, `results.json` (every encoding, seed and length), `extension.csv`, "
       "`extension.json` (every method, seed, step and length), `length_generalization.svg` "
       "(mean exact match by length, shaded min-max over seeds), `extension.svg` (exact match "
       "past L, mean over n = L+1..2L, against fine-tuning steps: one panel per method, the "
       "others in grey), `learned_table_similarity.png` (the cosine "
       "similarity of the trained table's rows, first seed), `extended_<method>_similarity.png` "
       "(the same for each extended table after fine-tuning), `rope_extension.csv`, "
       "`rope_extension.json` (each RoPE scaling's exact match at n = 1..2L at every point), "
       "`rope_extension.svg` (as `extension.svg`, one panel per scaling), `checkpoints/` (the runs "
       "the extensions start from, and the "
       "extended tables).\n\n";
  char wall[64];
  std::snprintf(wall, sizeof wall, "%.1f", rep.wall_seconds);
  o << "Wall time " << wall << " s; " << rep.machine << ".\n";
}

}  // namespace

std::string summary_markdown(const DemoReport& rep) {
  std::ostringstream o;
  const auto order = encoding_order(rep);
  write_intro(o, rep);
  write_claims(o, rep);
  write_encoding_table(o, rep, order);
  if (!rep.extension.empty()) write_extension(o, rep);
  if (!rep.rope_extension.empty()) write_rope_extension(o, rep);
  write_by_length(o, rep, order);
  write_files(o, rep);
  return o.str();
}

}  // namespace posemb::lab
