#include "lab/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lab/encoding.hpp"

namespace posemb::lab {
namespace {

// The rules' thresholds, stated in the summary next to each verdict.
constexpr double kVaswaniFloor = 0.90;      // both encodings learn the task in distribution
constexpr double kVaswaniTolerance = 0.03;  // and are this close (exact match, absolute)
constexpr double kPressDrop = 0.5;          // beyond L at most this fraction of in distribution
constexpr double kRuossFloor = 0.30;        // learned-randomized just past L, at least
constexpr double kNopeFloor = 0.90;         // NoPE in distribution ("near-perfect")
constexpr double kNopeMargin = 0.05;        // NoPE past L above sinusoidal and rope by this
constexpr double kCopyMargin = 0.02;        // copy's curve above random's by more than this

std::string range(std::size_t lo, std::size_t hi) {
  return "n = " + std::to_string(lo) + ".." + std::to_string(hi);
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "0.997 [0.990, 1.000]" (mean [min, max] over seeds), or "-" for no values.
std::string spread_text(const std::vector<double>& v, int digits = 3) {
  if (v.empty()) return "-";
  const Spread s = spread_of(v);
  if (s.count == 1) return fixed(s.mean, digits);
  return fixed(s.mean, digits) + " [" + fixed(s.min, digits) + ", " + fixed(s.max, digits) + "]";
}

double mean(const std::vector<double>& v) {
  return spread_of(v).mean;
}

// What the summary needs of one encoding.
struct EncodingNumbers {
  bool present = false;
  std::vector<double> in, near, far;  // per seed: 1..L, L+1..L+3, L+1..far_end
  std::size_t far_end = 0;            // the longest n every run has rows for
  bool near_beyond = false;           // no rows past L (a learned table)
};

EncodingNumbers numbers(const DemoReport& rep, const std::string& pe) {
  EncodingNumbers e;
  const auto runs = runs_of(rep, pe);
  if (runs.empty()) return e;
  e.present = true;
  const std::size_t L = rep.task.train_len;
  std::size_t top = 0;
  for (const auto& ls : spread_by_length(runs)) {
    if (ls.beyond_table) break;
    top = ls.length;
  }
  e.far_end = top;
  e.in = per_seed_mean_exact(runs, 1, L);
  e.near = per_seed_mean_exact(runs, L + 1, std::min(L + 3, top));
  e.far = per_seed_mean_exact(runs, L + 1, top);
  e.near_beyond = e.near.empty();
  return e;
}

// Per seed: the mean over the curve's points of the mean exact match at L+1..2L (the area under
// the curve, divided by the number of points).
std::vector<double> curve_areas(const DemoReport& rep, const std::string& method) {
  std::vector<double> out;
  const std::size_t L = rep.task.train_len;
  for (const auto& r : rep.extension) {
    if (r.method != method) continue;
    out.push_back(mean(curve_mean_exact(r, L + 1, rep.extended_train_len)));
  }
  return out;
}

std::vector<double> first_losses(const DemoReport& rep, const std::string& method) {
  std::vector<double> out;
  for (const auto& r : rep.extension) {
    if (r.method == method) out.push_back(r.first_loss);
  }
  return out;
}

// A quick run's budget is too small to refute a claim: a claim it does not meet is not judged.
std::string verdict(bool ok, bool quick) {
  if (ok) return "**reproduced**";
  return quick ? "not judged (quick run)" : "**not reproduced at this budget**";
}

// The encodings the published claims are about, found in the registry by their properties,
// with this run's numbers of each.
struct Role {
  std::string name;  // the registered name ("" when no encoding has the properties)
  EncodingNumbers n;
};

// The first registered encoding with the properties that has runs in rep (else the first with
// them, unmeasured).
Role role(const DemoReport& rep, bool (*pred)(const EncodingSpec&)) {
  const EncodingSpec* spec = find_encoding_if(pred);
  for (const auto* e : encodings()) {
    if (pred(*e) && !runs_of(rep, std::string(e->name)).empty()) {
      spec = e;
      break;
    }
  }
  if (spec == nullptr) return {};
  Role r{std::string(spec->name), {}};
  r.n = numbers(rep, r.name);
  return r;
}

struct Measured {
  std::size_t L = 0;
  std::string in_range, near_range;
  Role learned, randomized, sinusoidal, rope, none;
};

Measured measure(const DemoReport& rep) {
  Measured m;
  m.L = rep.task.train_len;
  m.in_range = range(1, m.L);
  m.near_range = range(m.L + 1, m.L + 3);
  m.learned = role(rep, [](const EncodingSpec& e) {
    return e.has_table && e.train_positions == PositionMode::contiguous;
  });
  m.randomized = role(rep, [](const EncodingSpec& e) {
    return e.has_table && e.train_positions == PositionMode::randomized;
  });
  m.sinusoidal = role(
      rep, [](const EncodingSpec& e) { return e.site == EncodingSite::input && e.any_position(); });
  m.rope = role(rep, [](const EncodingSpec& e) { return e.site == EncodingSite::attention; });
  m.none = role(rep, [](const EncodingSpec& e) { return e.site == EncodingSite::nowhere; });
  return m;
}

ClaimVerdict not_measured(ClaimVerdict c) {
  c.measured = "not measured";
  return c;
}

ClaimVerdict vaswani(const Measured& m) {
  const auto &learned = m.learned, &sin = m.sinusoidal;
  ClaimVerdict c;
  c.claim =
      "Vaswani et al. 2017: a learned table and the sinusoidal encoding do about as well "
      "within the trained lengths";
  c.published = "WMT14 En-De dev: learned PPL 4.92, BLEU 25.7; sinusoidal PPL 4.92, BLEU 25.8";
  c.rule = "both mean exact matches over " + m.in_range + " at least " + fixed(kVaswaniFloor, 2) +
           " and within " + fixed(kVaswaniTolerance, 2) + " of each other";
  if (!learned.n.present || !sin.n.present || learned.n.in.empty() || sin.n.in.empty()) {
    return not_measured(c);
  }
  const double a = mean(learned.n.in), b = mean(sin.n.in);
  c.measured = "exact match, " + m.in_range + ": " + learned.name + " " +
               spread_text(learned.n.in) + ", " + sin.name + " " + spread_text(sin.n.in);
  c.reproduced = a >= kVaswaniFloor && b >= kVaswaniFloor && std::fabs(a - b) <= kVaswaniTolerance;
  return c;
}

ClaimVerdict press(const Measured& m) {
  const auto& sin = m.sinusoidal;
  ClaimVerdict c;
  c.claim =
      "Press et al. 2022: the sinusoidal encoding can be computed past the training "
      "length L but does not generalize there";
  c.published =
      "WikiText-103, L = 512, perplexity 20.05 at 512, 24.86 at 712, 43.54 at 1012, "
      "132.41 at 2512";
  c.rule = sin.name + "'s mean exact match over " + m.near_range + " at most " +
           fixed(kPressDrop, 2) + " x its mean over " + m.in_range;
  if (!sin.n.present || sin.n.in.empty() || sin.n.near.empty()) return not_measured(c);
  c.measured = sin.name + " exact match: " + spread_text(sin.n.in) + " over " + m.in_range + ", " +
               spread_text(sin.n.near) + " over " + m.near_range + ", " + spread_text(sin.n.far) +
               " over " + range(m.L + 1, sin.n.far_end);
  c.reproduced = mean(sin.n.near) <= kPressDrop * mean(sin.n.in);
  return c;
}

ClaimVerdict ruoss(const Measured& m) {
  const auto &rnd = m.randomized, &sin = m.sinusoidal;
  ClaimVerdict c;
  c.claim =
      "Ruoss et al. 2023: training a large learned table on randomized positions extends "
      "to longer sequences";
  c.published =
      "+12.0% average test accuracy over 15 algorithmic tasks (trained on n <= 40, "
      "tested on 41..500)";
  c.rule = rnd.name + "'s mean exact match over " + m.near_range + " at least " +
           fixed(kRuossFloor, 2) + " and above " + sin.name + "'s (means over seeds)";
  if (!rnd.n.present || !sin.n.present || rnd.n.near.empty() || sin.n.near.empty()) {
    return not_measured(c);
  }
  c.measured = "exact match, " + m.near_range + ": " + rnd.name + " " + spread_text(rnd.n.near) +
               ", " + sin.name + " " + spread_text(sin.n.near) +
               (m.learned.n.near_beyond ? ", " + m.learned.name + ": no rows past its table"
                                        : std::string()) +
               "; in distribution " + rnd.name + " " + spread_text(rnd.n.in);
  c.reproduced = mean(rnd.n.near) >= kRuossFloor && mean(rnd.n.near) > mean(sin.n.near);
  return c;
}

ClaimVerdict longformer(const DemoReport& rep, const Measured& m) {
  ClaimVerdict c;
  c.claim =
      "Beltagy et al. 2020 (Longformer): new rows initialized by copying the trained ones "
      "recover faster than random ones";
  c.published =
      "RoBERTa's 512 rows extended to 4096, bits per character at the start: copy "
      "1.957, random 10.299; copy after 2K updates 1.753";
  const std::string ext = range(m.L + 1, rep.extended_train_len);
  c.rule = "copy's exact match over " + ext +
           ", averaged over the fine-tuning curve's points (step 0 included), above random's "
           "by more than " +
           fixed(kCopyMargin, 2) + " (means over seeds)";
  const auto copy = curve_areas(rep, "copy"), random = curve_areas(rep, "random");
  if (copy.empty() || random.empty()) return not_measured(c);
  c.measured = "exact match over " + ext + ", mean over the curve: copy " + spread_text(copy) +
               ", random " + spread_text(random) + "; loss of the first fine-tuning batch: copy " +
               spread_text(first_losses(rep, "copy")) + ", random " +
               spread_text(first_losses(rep, "random"));
  c.reproduced = mean(copy) > mean(random) + kCopyMargin;
  return c;
}

ClaimVerdict nope(const Measured& m) {
  const auto &none = m.none, &sin = m.sinusoidal, &rope = m.rope;
  ClaimVerdict c;
  c.claim =
      "Kazemnejad et al. 2023: no positional encoding (NoPE) generalizes to longer "
      "sequences better than sinusoidal and rotary";
  c.published =
      "decoder-only models trained on n <= 20, tested to 40: near-perfect in "
      "distribution for every encoding; NoPE (and T5's bias) best beyond it, "
      "sinusoidal and rotary poor";
  c.rule = none.name + "'s mean exact match over " + m.in_range + " at least " +
           fixed(kNopeFloor, 2) + ", and over " + m.near_range + " above both " + sin.name +
           "'s and " + rope.name + "'s by " + fixed(kNopeMargin, 2) + " or more (means over seeds)";
  if (!none.n.present || !sin.n.present || !rope.n.present || none.n.near.empty() ||
      sin.n.near.empty() || rope.n.near.empty()) {
    return not_measured(c);
  }
  c.measured = none.name + " " + spread_text(none.n.in) + " over " + m.in_range + "; over " +
               m.near_range + ": " + none.name + " " + spread_text(none.n.near) + ", " + sin.name +
               " " + spread_text(sin.n.near) + ", " + rope.name + " " + spread_text(rope.n.near);
  const double b = mean(none.n.near);
  c.reproduced = mean(none.n.in) >= kNopeFloor && b >= mean(sin.n.near) + kNopeMargin &&
                 b >= mean(rope.n.near) + kNopeMargin;
  return c;
}

}  // namespace

std::vector<const RunResults*> runs_of(const DemoReport& rep, const std::string& pe) {
  std::vector<const RunResults*> out;
  for (const auto& r : rep.runs) {
    if (r.pe == pe) out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(), [](const RunResults* a, const RunResults* b) {
    return a->seed.value_or(0) < b->seed.value_or(0);
  });
  return out;
}

std::vector<double> per_seed_mean_exact(const std::vector<const RunResults*>& runs, std::size_t lo,
                                        std::size_t hi) {
  std::vector<double> out;
  for (const RunResults* r : runs) {
    const auto m = mean_exact_match(*r, lo, hi);
    if (!m) return {};
    out.push_back(*m);
  }
  return out;
}

std::vector<ClaimVerdict> judge_claims(const DemoReport& rep) {
  const Measured m = measure(rep);
  return {vaswani(m), press(m), ruoss(m), longformer(rep, m), nope(m)};
}

namespace {

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
  o << "Task: `" << task_kind_name(rep.task.kind) << "` over " << rep.task.alphabet
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
       "lab/summary.cpp, the verdicts are not):\n\n";
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

// The extension experiment's curve: exact match past L while fine-tuning, per method.
void write_extension(std::ostringstream& o, const DemoReport& rep) {
  const std::size_t L = rep.task.train_len;
  const std::size_t L2 = rep.extended_train_len;
  o << "\n## Extending the learned table: exact match over " << range(L + 1, L2)
    << " while fine-tuning\n\n";
  o << rep.extension_training << ".\n\n";
  std::vector<std::string> methods;
  for (const auto& r : rep.extension) {
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
      methods.push_back(r.method);
    }
  }
  // At most 6 points of the curve: the first, the last, and evenly spaced ones between.
  const auto& curve = rep.extension.front().curve;
  std::vector<std::size_t> cols;
  const std::size_t want = std::min<std::size_t>(6, curve.size());
  for (std::size_t k = 0; k < want; ++k) {
    cols.push_back(want == 1 ? 0 : k * (curve.size() - 1) / (want - 1));
  }
  o << "| new rows by | loss of the first batch |";
  for (std::size_t i : cols) o << " step " << curve[i].first << " |";
  o << " after, " << range(1, L) << " |\n|---|---|";
  for (std::size_t i = 0; i <= cols.size(); ++i) o << "---|";
  o << "\n";
  for (const auto& m : methods) {
    o << "| " << m << " | " << spread_text(first_losses(rep, m)) << " |";
    for (std::size_t i : cols) {
      std::vector<double> at;
      for (const auto& r : rep.extension) {
        if (r.method == m && i < r.curve.size()) at.push_back(curve_mean_exact(r, L + 1, L2)[i]);
      }
      o << " " << spread_text(at) << " |";
    }
    std::vector<double> kept;
    for (const auto& r : rep.extension) {
      RunResults after;
      after.results = r.after;
      const auto v = mean_exact_match(after, 1, L);
      if (r.method == m && v) kept.push_back(*v);
    }
    o << " " << spread_text(kept) << " |\n";
  }
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
       "past L against fine-tuning steps), `learned_table_similarity.png` (the cosine "
       "similarity of the trained table's rows, first seed), `extended_<method>_similarity.png` "
       "(the same for each extended table after fine-tuning), `checkpoints/` (the learned runs "
       "and their extended tables).\n\n";
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
  write_by_length(o, rep, order);
  write_files(o, rep);
  return o.str();
}

}  // namespace posemb::lab
