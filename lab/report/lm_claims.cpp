// The text demo's rules (lab/report/lm_claims.hpp): each published claim, the bits per byte of
// this run it reads and the rule that decides its verdict, fixed here before any full run. The
// margins are at least 0.05 bits per byte: differences between encodings in distribution are of
// the order of seed noise on a model this small (shared/REFERENCES.md).
#include "lab/report/lm_claims.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/report/lm_results.hpp"
#include "lab/report/summary_numbers.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {
namespace {

using namespace summary_numbers;

constexpr double kSameTolerance = 0.15;  // Vaswani, Kazemnejad: means at L this close
constexpr double kDegrades = 0.10;       // Press: sinusoidal past L above its L by more
constexpr double kHolds = 0.05;          // ALiBi, T5: past L at most this above L
constexpr double kRuossHolds = 0.30;     // learned-randomized past L at most this above L
constexpr double kFarBelow = 0.50;       // Longformer: copy's step 0 below random's by more
constexpr double kRecovers = 0.10;       // Chen: PI after fine-tuning at most this above L
constexpr double kBetter = 0.05;         // Peng: YaRN's step 0 below PI's by more

// The library's RoPE scaling names the claims compare (posemb/rope_scaling.hpp).
constexpr const char* kLinear = "linear";
constexpr const char* kYarn = "yarn";

// The encodings by property (lab/encodings/encoding.hpp).
bool learned(const EncodingSpec& e) {
  return e.has_table && e.trainable && e.train_positions == PositionMode::contiguous;
}
bool randomized(const EncodingSpec& e) {
  return e.has_table && e.trainable && e.train_positions == PositionMode::randomized;
}
bool sinusoidal(const EncodingSpec& e) {
  return e.site == EncodingSite::input && !e.trainable;
}
bool rotary(const EncodingSpec& e) {
  return e.site == EncodingSite::attention && !e.trainable;
}
bool no_positions(const EncodingSpec& e) {
  return e.site == EncodingSite::nowhere;
}
bool alibi(const EncodingSpec& e) {
  return e.site == EncodingSite::scores && !e.trainable;
}
bool t5_bias(const EncodingSpec& e) {
  return e.trained_bias();
}

double nan_mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  for (const double x : v) {
    if (!std::isfinite(x)) return NAN;
  }
  return mean(v);
}

// "2.81 [2.79, 2.84]", or "beyond the table" / "-".
std::string bits_text(const std::vector<double>& v) {
  if (v.empty()) return "-";
  for (const double x : v) {
    if (!std::isfinite(x)) return "beyond the table";
  }
  return spread_text(v, 2);
}

// This run's bits per byte of one encoding (the one of the registry with the property that ran).
struct Enc {
  std::string name;  // "" when none ran
  const DemoReport* rep = nullptr;
  bool present() const { return !name.empty(); }
  // Per seed at length n (NaN beyond the table).
  std::vector<double> at(std::size_t n) const {
    std::vector<double> v;
    for (const auto* r : runs_of(*rep, name)) v.push_back(bits_at(r->results, n));
    return v;
  }
  double mean_at(std::size_t n) const { return nan_mean(at(n)); }
};

Enc find(const DemoReport& rep, bool (*pred)(const EncodingSpec&)) {
  for (const auto* e : encodings()) {
    if (pred(*e) && !runs_of(rep, std::string(e->name)).empty()) {
      return {std::string(e->name), &rep};
    }
  }
  return {"", &rep};
}

// The lengths past L every run was evaluated at (2L, 4L, ...), from the first run.
std::vector<std::size_t> past_lengths(const DemoReport& rep) {
  std::vector<std::size_t> v;
  if (rep.runs.empty()) return v;
  for (const auto& l : rep.runs.front().results) {
    if (l.length > rep.task.train_len) v.push_back(l.length);
  }
  return v;
}

ClaimVerdict not_measured(ClaimVerdict c) {
  c.measured = "not measured";
  c.reason = "its runs are missing";
  return c;
}

// "name: 2.81 at 64, 2.95 at 128, ..." over L and the lengths past it.
std::string by_length(const Enc& e, std::size_t L, const std::vector<std::size_t>& past) {
  std::string s = e.name + ": " + bits_text(e.at(L)) + " at " + std::to_string(L);
  for (const auto n : past) s += ", " + bits_text(e.at(n)) + " at " + std::to_string(n);
  return s;
}

// Whether e's mean at every length past L is at most `margin` above its mean at L; the reason
// when not.
bool holds_past(const Enc& e, std::size_t L, const std::vector<std::size_t>& past, double margin,
                std::string& reason) {
  const double at_l = e.mean_at(L);
  for (const auto n : past) {
    const double v = e.mean_at(n);
    if (!(std::isfinite(at_l) && std::isfinite(v) && v <= at_l + margin)) {
      reason = e.name + " at " + std::to_string(n) + ": " + fixed(v, 2) + " against " +
               fixed(at_l, 2) + " at " + std::to_string(L);
      return false;
    }
  }
  return !past.empty();
}

struct Ctx {
  const DemoReport& rep;
  std::size_t L;
  std::vector<std::size_t> past;
  Enc learned, randomized, sinusoidal, rope, none, alibi, t5;
};

ClaimVerdict vaswani(const Ctx& x) {
  ClaimVerdict c;
  c.claim = "Vaswani et al. 2017: the encodings do about as well within the trained length";
  c.published =
      "WMT14 En-De dev: learned PPL 4.92, sinusoidal 4.92; WikiText-103 (Haviv et al. 2022): "
      "learned 20.42, sinusoidal 20.16, ALiBi 19.71, no positions 20.97";
  c.rule = "the mean bits per byte at L of every encoding with positions within " +
           fixed(kSameTolerance, 2) + " of each other (highest minus lowest)";
  double lo = INFINITY, hi = -INFINITY;
  std::string lo_name, hi_name;
  for (const Enc* e : {&x.learned, &x.randomized, &x.sinusoidal, &x.rope, &x.alibi, &x.t5}) {
    if (!e->present()) continue;
    const double v = e->mean_at(x.L);
    c.measured += (c.measured.empty() ? "" : "; ") + e->name + " " + bits_text(e->at(x.L));
    if (v < lo) lo = v, lo_name = e->name;
    if (v > hi) hi = v, hi_name = e->name;
  }
  if (c.measured.empty()) return not_measured(c);
  c.measured = "bits per byte at L = " + std::to_string(x.L) + ": " + c.measured;
  c.reproduced = std::isfinite(lo) && std::isfinite(hi) && hi - lo <= kSameTolerance;
  if (!c.reproduced) {
    c.reason = hi_name + " " + fixed(hi, 2) + " and " + lo_name + " " + fixed(lo, 2) +
               " differ by " + fixed(hi - lo, 2);
  }
  return c;
}

ClaimVerdict press_sinusoidal(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Press et al. 2022: the sinusoidal encoding can be computed past the training length L "
      "but degrades there";
  c.published =
      "WikiText-103, L = 512, perplexity 20.05 at 512, 24.86 at 712, 43.54 at 1012, 132.41 at "
      "2512";
  c.rule =
      "the sinusoidal encoding's mean bits per byte at every evaluated length past L above "
      "its mean at L by more than " +
      fixed(kDegrades, 2);
  const Enc& e = x.sinusoidal;
  if (!e.present() || x.past.empty()) return not_measured(c);
  c.measured = by_length(e, x.L, x.past);
  const double at_l = e.mean_at(x.L);
  c.reproduced = true;
  for (const auto n : x.past) {
    const double v = e.mean_at(n);
    if (!(v > at_l + kDegrades)) {
      c.reproduced = false;
      c.reason = "at " + std::to_string(n) + " only " + fixed(v - at_l, 2) + " above L";
      break;
    }
  }
  return c;
}

ClaimVerdict holds(const Ctx& x, const Enc& e, std::string claim, std::string published,
                   double margin) {
  ClaimVerdict c;
  c.claim = std::move(claim);
  c.published = std::move(published);
  c.rule = "its mean bits per byte at every evaluated length past L at most " + fixed(margin, 2) +
           " above its mean at L";
  if (!e.present() || x.past.empty()) return not_measured(c);
  c.rule = e.name + "'s " + c.rule.substr(4);
  c.measured = by_length(e, x.L, x.past);
  c.reproduced = holds_past(e, x.L, x.past, margin, c.reason);
  return c;
}

ClaimVerdict press_alibi(const Ctx& x) {
  return holds(
      x, x.alibi, "Press et al. 2022: ALiBi trained at L holds its perplexity at 2L and beyond",
      "WikiText-103, L = 512: 19.73 at 512, 18.73 at 1012, 18.41 at 2512, 18.31 at 15512", kHolds);
}

ClaimVerdict t5(const Ctx& x) {
  return holds(x, x.t5,
               "Raffel et al. 2020 (T5's bias), in Press et al. 2022: a learned relative bias "
               "holds past L like ALiBi",
               "WikiText-103, L = 512: 19.65 at 512, 19.10 at 712, 18.79 at 1012, 20.41 at 2512",
               kHolds);
}

ClaimVerdict ruoss(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Ruoss et al. 2023: a learned table trained on randomized positions runs past L, where a "
      "learned table at positions 0..L-1 cannot";
  c.published =
      "+12.0% average test accuracy over 15 algorithmic tasks (trained on n <= 40, tested on "
      "41..500); a learned table has no row past its own (Press et al.)";
  c.rule =
      "the learned table at 0..L-1 has no bits per byte past L (beyond its table) or a "
      "higher one, and the randomized table's mean at every evaluated length past L at "
      "most " +
      fixed(kRuossHolds, 2) + " above its mean at L";
  const Enc &r = x.randomized, &l = x.learned;
  if (!r.present() || !l.present() || x.past.empty()) return not_measured(c);
  c.measured = by_length(r, x.L, x.past) + "; " + by_length(l, x.L, x.past);
  bool learned_worse = true;
  for (const auto n : x.past) {
    const double lv = l.mean_at(n), rv = r.mean_at(n);
    if (std::isfinite(lv) && !(std::isfinite(rv) && rv < lv)) {
      learned_worse = false;
      c.reason = l.name + " at " + std::to_string(n) + ": " + fixed(lv, 2) + ", not above " +
                 r.name + "'s " + fixed(rv, 2);
    }
  }
  c.reproduced = learned_worse && holds_past(r, x.L, x.past, kRuossHolds, c.reason);
  return c;
}

ClaimVerdict kazemnejad(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Kazemnejad et al. 2023: a decoder without positional encoding (NoPE) is competitive in "
      "distribution and holds past L better than sinusoidal and rotary";
  c.published =
      "algorithmic tasks (trained on n <= 20, tested to 40): NoPE and T5's bias best past L; a "
      "1.3B code model: NoPE holds to ~1.8x its context, rotary explodes just past it; "
      "WikiText-103 (Haviv et al.): no positions 20.97 against 20.16-20.42";
  c.rule = "NoPE's mean bits per byte at L within " + fixed(kSameTolerance, 2) +
           " of the mean of the encodings with positions at L, and at 2L below the sinusoidal "
           "encoding's and the rotary one's";
  const Enc &none = x.none, &sin = x.sinusoidal, &rope = x.rope;
  if (!none.present() || !sin.present() || !rope.present() || x.past.empty()) {
    return not_measured(c);
  }
  std::vector<double> others;
  for (const Enc* e : {&x.learned, &x.randomized, &x.sinusoidal, &x.rope, &x.alibi, &x.t5}) {
    if (e->present()) others.push_back(e->mean_at(x.L));
  }
  const double in = none.mean_at(x.L), ref = nan_mean(others);
  const std::size_t L2 = x.past.front();
  const double n2 = none.mean_at(L2), s2 = sin.mean_at(L2), r2 = rope.mean_at(L2);
  c.measured = by_length(none, x.L, x.past) + "; the others' mean at L " + fixed(ref, 2) + "; at " +
               std::to_string(L2) + ": " + sin.name + " " + fixed(s2, 2) + ", " + rope.name + " " +
               fixed(r2, 2);
  const bool competitive = std::fabs(in - ref) <= kSameTolerance;
  const bool beyond = n2 < s2 && n2 < r2;
  c.reproduced = competitive && beyond;
  if (!competitive) c.reason = "at L " + fixed(in - ref, 2) + " from the others' mean";
  if (competitive && !beyond) {
    c.reason = "at " + std::to_string(L2) + " " + fixed(n2, 2) + ", not below both";
  }
  return c;
}

// The runs of an extension method (at a factor; 0: any).
std::vector<const ExtensionRun*> runs_with(const std::vector<ExtensionRun>& runs,
                                           const std::string& method, double factor) {
  std::vector<const ExtensionRun*> v;
  for (const auto& r : runs) {
    if (r.method == method && (factor == 0.0 || r.factor == factor)) v.push_back(&r);
  }
  return v;
}

// Per seed: a run's bits per byte at n at step 0 or after fine-tuning.
std::vector<double> ext_bits(const std::vector<const ExtensionRun*>& runs, std::size_t n,
                             bool after) {
  std::vector<double> v;
  for (const auto* r : runs) v.push_back(after ? after_bits(*r, n) : step0_bits(*r, n));
  return v;
}

// The factors of the RoPE runs, in order of first appearance.
std::vector<double> factors_of(const std::vector<ExtensionRun>& runs) {
  std::vector<double> f;
  for (const auto& r : runs) {
    if (std::find(f.begin(), f.end(), r.factor) == f.end()) f.push_back(r.factor);
  }
  return f;
}

ClaimVerdict longformer(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Beltagy et al. 2020 (Longformer): a table extended by copying its rows starts far below "
      "one extended by random rows";
  c.published =
      "RoBERTa's 512 rows extended to 4096, bits per character at step 0: copy 1.957, random "
      "10.299; copy after 2K updates 1.753";
  const std::string copy(resize_method_name(ResizeMethod::copy));
  const std::string random(resize_method_name(ResizeMethod::random));
  const std::size_t L2 = 2 * x.L;
  c.rule = copy + "'s mean bits per byte at 2L before any update below " + random +
           "'s by more "
           "than " +
           fixed(kFarBelow, 2);
  const auto cr = runs_with(x.rep.extension, copy, 0.0);
  const auto rr = runs_with(x.rep.extension, random, 0.0);
  if (cr.empty() || rr.empty()) return not_measured(c);
  const auto c0 = ext_bits(cr, L2, false), r0 = ext_bits(rr, L2, false);
  c.measured = "at " + std::to_string(L2) + ", step 0: " + copy + " " + bits_text(c0) + ", " +
               random + " " + bits_text(r0) + "; after fine-tuning: " + copy + " " +
               bits_text(ext_bits(cr, L2, true)) + ", " + random + " " +
               bits_text(ext_bits(rr, L2, true));
  c.reproduced = nan_mean(c0) < nan_mean(r0) - kFarBelow;
  if (!c.reproduced) c.reason = "step 0: " + fixed(nan_mean(r0) - nan_mean(c0), 2) + " apart";
  return c;
}

ClaimVerdict chen(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Chen et al. 2023: RoPE with position interpolation recovers its quality at 2x and 4x "
      "within a short fine-tuning";
  c.published =
      "LLaMA 7B on PG-19: without fine-tuning 16.10 at 4x; after 200 steps 7.12 (the model "
      "at its own length ~7); PI fine-tuned at 4x 6.95 against 7.69 for plain extrapolation";
  c.rule = std::string(kLinear) + "'s mean bits per byte at sL after its fine-tuning at most " +
           fixed(kRecovers, 2) + " above the rotary runs' own mean at L, for every factor s";
  const auto factors = factors_of(x.rep.rope_extension);
  if (!x.rope.present() || factors.empty()) return not_measured(c);
  const double at_l = x.rope.mean_at(x.L);
  c.measured = x.rope.name + " at " + std::to_string(x.L) + ": " + bits_text(x.rope.at(x.L));
  c.reproduced = true;
  for (const double f : factors) {
    const std::size_t n = static_cast<std::size_t>(f) * x.L;
    const auto runs = runs_with(x.rep.rope_extension, kLinear, f);
    const auto before = ext_bits(runs, n, false), after = ext_bits(runs, n, true);
    c.measured += "; " + std::string(kLinear) + " x" + fixed(f, 0) + " at " + std::to_string(n) +
                  ": " + bits_text(before) + " before, " + bits_text(after) + " after";
    if (!(nan_mean(after) <= at_l + kRecovers)) {
      c.reproduced = false;
      c.reason = "x" + fixed(f, 0) + ": " + fixed(nan_mean(after) - at_l, 2) + " above L";
    }
  }
  return c;
}

ClaimVerdict peng(const Ctx& x) {
  ClaimVerdict c;
  c.claim =
      "Peng et al. 2023 (YaRN): before any fine-tuning, YaRN does better past L than position "
      "interpolation";
  c.published =
      "LLaMA-2-7B at 8x without fine-tuning (llama.cpp #2268): linear 116.95, YaRN 86.48 "
      "perplexity";
  c.rule = std::string(kYarn) + "'s mean bits per byte at sL before any update below " + kLinear +
           "'s by more than " + fixed(kBetter, 2) + ", for every factor s";
  const auto factors = factors_of(x.rep.rope_extension);
  if (factors.empty()) return not_measured(c);
  c.reproduced = true;
  for (const double f : factors) {
    const std::size_t n = static_cast<std::size_t>(f) * x.L;
    const auto y = ext_bits(runs_with(x.rep.rope_extension, kYarn, f), n, false);
    const auto p = ext_bits(runs_with(x.rep.rope_extension, kLinear, f), n, false);
    c.measured += (c.measured.empty() ? "" : "; ") + std::string("x") + fixed(f, 0) + " at " +
                  std::to_string(n) + ", step 0: " + kYarn + " " + bits_text(y) + ", " + kLinear +
                  " " + bits_text(p);
    if (!(nan_mean(y) < nan_mean(p) - kBetter)) {
      c.reproduced = false;
      c.reason = "x" + fixed(f, 0) + ": " + kYarn + " " + fixed(nan_mean(p) - nan_mean(y), 2) +
                 " below " + kLinear;
    }
  }
  return c;
}

}  // namespace

std::vector<ClaimVerdict> judge_lm_claims(const DemoReport& rep) {
  const Ctx x{rep,
              rep.task.train_len,
              past_lengths(rep),
              find(rep, learned),
              find(rep, randomized),
              find(rep, sinusoidal),
              find(rep, rotary),
              find(rep, no_positions),
              find(rep, alibi),
              find(rep, t5_bias)};
  return {vaswani(x),    press_sinusoidal(x), press_alibi(x), t5(x),  ruoss(x),
          kazemnejad(x), longformer(x),       chen(x),        peng(x)};
}

}  // namespace posemb::lab
