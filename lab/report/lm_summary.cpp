// The text demo's summary.md (lab/report/summary.hpp's lm_summary_markdown).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "lab/report/lm_claims.hpp"
#include "lab/report/lm_results.hpp"
#include "lab/report/summary.hpp"
#include "lab/report/summary_numbers.hpp"

namespace posemb::lab {
namespace {

using namespace summary_numbers;

// "2.81 [2.79, 2.84]" over seeds; "beyond the table" when a seed has no value.
std::string bits_text(const std::vector<double>& v) {
  if (v.empty()) return "-";
  for (const double x : v) {
    if (!std::isfinite(x)) return "beyond the table";
  }
  return spread_text(v, 2);
}

void write_intro(std::ostringstream& o, const DemoReport& rep) {
  const std::size_t L = rep.task.train_len;
  o << "# posemb demo --task text: bits per byte past the trained length\n\n";
  if (rep.quick) {
    o << "**A quick run** (`posemb demo --task text --quick`): a smoke test of the pipeline at a "
         "fraction of the budget. A claim it meets is marked reproduced; one it does not is "
         "\"not judged (quick run)\": run `posemb demo --task text` without --quick to judge "
         "it.\n\n";
  }
  o << "A byte-level language model (every byte predicted from the ones before it) on "
    << (rep.task.corpus_identity.empty() ? std::string("the corpus")
                                         : rep.task.corpus_identity.text())
    << ", trained at L = " << L << " bytes: " << rep.model << "; " << rep.training << ". "
    << rep.evaluation << " Numbers are the mean over seeds, with [min, max] over seeds.\n\n";
}

void write_claims(std::ostringstream& o, const DemoReport& rep) {
  o << "## Published claims\n\n";
  o << "| published claim | published numbers | this run (bits per byte) | verdict |\n"
       "|---|---|---|---|\n";
  const auto claims = judge_lm_claims(rep);
  for (const auto& c : claims) {
    std::string v = verdict(c.reproduced, rep.quick);
    if (!c.reproduced && !c.reason.empty()) v += ": " + c.reason;
    o << "| " << c.claim << " | " << c.published << " | " << c.measured << " | " << v << " |\n";
  }
  o << "\nHow each verdict is decided, from this run's numbers (the rules are fixed in "
       "lab/report/lm_claims.cpp, the verdicts are not):\n\n";
  for (const auto& c : claims) {
    o << "- " << c.claim.substr(0, c.claim.find(':')) << ": reproduced when " << c.rule << ".\n";
  }
}

// The lengths of the first run.
std::vector<std::size_t> lengths_of(const DemoReport& rep) {
  std::vector<std::size_t> v;
  if (!rep.runs.empty()) {
    for (const auto& l : rep.runs.front().results) v.push_back(l.length);
  }
  return v;
}

void write_lengths(std::ostringstream& o, const DemoReport& rep) {
  const auto lengths = lengths_of(rep);
  std::vector<std::string> order;
  for (const auto& r : rep.runs) {
    if (std::find(order.begin(), order.end(), r.pe) == order.end()) order.push_back(r.pe);
  }
  o << "\n## Bits per byte by evaluation length (lm_length.svg)\n\n| encoding |";
  for (const auto n : lengths) o << ' ' << n << (n == rep.task.train_len ? " (L)" : "") << " |";
  o << "\n|---|";
  for (std::size_t i = 0; i < lengths.size(); ++i) o << "---|";
  o << '\n';
  for (const auto& pe : order) {
    o << "| " << pe << " |";
    const auto runs = runs_of(rep, pe);
    for (const auto n : lengths) {
      std::vector<double> v;
      for (const auto* r : runs) v.push_back(bits_at(r->results, n));
      o << ' ' << bits_text(v) << " |";
    }
    o << '\n';
  }
}

// One table of extension runs: per method (and factor s), bits per byte at L and at sL before any
// update (step 0) and after the fine-tuning at sL.
void write_extension(std::ostringstream& o, const std::vector<ExtensionRun>& runs, std::size_t L) {
  std::vector<std::pair<std::string, double>> keys;
  for (const auto& r : runs) {
    if (std::find(keys.begin(), keys.end(), std::pair{r.method, r.factor}) == keys.end()) {
      keys.emplace_back(r.method, r.factor);
    }
  }
  o << "| method | s | step 0, at L | step 0, at sL | fine-tuned, at L | fine-tuned, at sL |\n"
       "|---|---|---|---|---|---|\n";
  for (const auto& [method, factor] : keys) {
    o << "| " << method << " | " << fixed(factor, 0) << " |";
    const std::size_t sl = static_cast<std::size_t>(factor) * L;
    for (const bool after : {false, true}) {
      for (const std::size_t n : {L, sl}) {
        std::vector<double> v;
        for (const auto& r : runs) {
          if (r.method == method && r.factor == factor) {
            v.push_back(after ? after_bits(r, n) : step0_bits(r, n));
          }
        }
        o << ' ' << bits_text(v) << " |";
      }
    }
    o << '\n';
  }
}

}  // namespace

std::string lm_summary_markdown(const DemoReport& rep) {
  std::ostringstream o;
  write_intro(o, rep);
  write_claims(o, rep);
  write_lengths(o, rep);
  if (!rep.extension.empty()) {
    o << "\n## The learned table extended to 2L (lm_extension.svg)\n\n"
      << rep.extension_training << ".\n\n";
    write_extension(o, rep.extension, rep.task.train_len);
  }
  if (!rep.rope_extension.empty()) {
    o << "\n## RoPE at 2L and 4L with each scaling (lm_extension.svg)\n\n"
      << rep.rope_extension_training << ".\n\n";
    write_extension(o, rep.rope_extension, rep.task.train_len);
  }
  o << "\n## The run\n\n" << fixed(rep.wall_seconds, 0) << " s wall; " << rep.machine << ".\n";
  return o.str();
}

}  // namespace posemb::lab
