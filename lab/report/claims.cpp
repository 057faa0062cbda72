// The summary's rules (lab/report/claims.hpp): each published claim, the numbers of this run it
// reads and the rule that decides its verdict (fixed here, before any run).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/report/claims.hpp"
#include "lab/report/summary_numbers.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {

namespace {

using namespace summary_numbers;

// The rules' thresholds, stated in the summary next to each verdict.
constexpr double kVaswaniFloor = 0.90;      // both encodings learn the task in distribution
constexpr double kVaswaniTolerance = 0.03;  // and are this close (exact match, absolute)
constexpr double kPressDrop = 0.5;          // beyond L at most this fraction of in distribution
constexpr double kRuossFloor = 0.30;        // learned-randomized just past L, at least
constexpr double kNopeFloor = 0.90;         // NoPE in distribution ("near-perfect")
constexpr double kNopeMargin = 0.05;        // NoPE past L above sinusoidal and rope by this
constexpr double kCurveMargin = 0.02;       // one fine-tuning curve above another by more than this
constexpr double kAlibiMargin = 0.05;       // ALiBi past L above sinusoidal by this

// The extension claims' rule: method a's exact match over `ext` averaged over the fine-tuning
// curve's points (areas: per seed, curve_areas) above method b's by more than kCurveMargin.
std::string curve_rule(const std::string& a, const std::string& b, const std::string& ext) {
  return a + "'s exact match over " + ext +
         ", averaged over the fine-tuning curve's points (step 0 included), above " + b +
         "'s by more than " + fixed(kCurveMargin, 2) + " (means over seeds)";
}
bool curve_above(const std::vector<double>& a, const std::vector<double>& b) {
  return mean(a) > mean(b) + kCurveMargin;
}

// The claims' encodings, by role (claim_roles()'s order).
enum RoleId : std::size_t { kLearned, kRandomized, kSinusoidal, kRope, kNone, kAlibi, kRoles };

constexpr ClaimRole kClaimRoles[] = {
    {"a learned table at positions 0..len-1",
     [](const EncodingSpec& e) {
       return e.has_table && e.trainable && e.train_positions == PositionMode::contiguous;
     }},
    {"a learned table at randomized positions",
     [](const EncodingSpec& e) {
       return e.has_table && e.trainable && e.train_positions == PositionMode::randomized;
     }},
    {"a fixed encoding added at the input",
     [](const EncodingSpec& e) { return e.site == EncodingSite::input && !e.trainable; }},
    {"a fixed rotation of q and k",
     [](const EncodingSpec& e) { return e.site == EncodingSite::attention && !e.trainable; }},
    {"no positional encoding",
     [](const EncodingSpec& e) { return e.site == EncodingSite::nowhere; }},
    {"a fixed bias on the scores (ALiBi)",
     [](const EncodingSpec& e) { return e.site == EncodingSite::scores && !e.trainable; }},
};
static_assert(std::size(kClaimRoles) == kRoles, "one role a RoleId");

// A role's encoding and this run's numbers of it.
struct Role {
  std::string name;  // the registered name ("" when no encoding has the properties)
  EncodingNumbers n;
};

Role role(const DemoReport& rep, RoleId id) {
  const EncodingSpec* spec = encoding_of(kClaimRoles[id]);
  if (spec == nullptr) return {};
  Role r{std::string(spec->name), {}};
  r.n = numbers(rep, r.name);
  return r;
}

struct Measured {
  std::size_t L = 0;
  std::string in_range, near_range;
  Role learned, randomized, sinusoidal, rope, none, alibi;
};

Measured measure(const DemoReport& rep) {
  Measured m;
  m.L = rep.task.train_len;
  m.in_range = range(1, m.L);
  m.near_range = range(m.L + 1, m.L + 3);
  m.learned = role(rep, kLearned);
  m.randomized = role(rep, kRandomized);
  m.sinusoidal = role(rep, kSinusoidal);
  m.rope = role(rep, kRope);
  m.none = role(rep, kNone);
  m.alibi = role(rep, kAlibi);
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
  // The library's names of the two ways of extending a table (posemb/resize.hpp).
  const std::string by_copy(resize_method_name(ResizeMethod::copy));
  const std::string by_random(resize_method_name(ResizeMethod::random));
  c.rule = curve_rule(by_copy, by_random, ext);
  const auto copy = curve_areas(rep.extension, by_copy, m.L + 1, rep.extended_train_len);
  const auto random = curve_areas(rep.extension, by_random, m.L + 1, rep.extended_train_len);
  if (copy.empty() || random.empty()) return not_measured(c);
  c.measured = "exact match over " + ext + ", mean over the curve: copy " + spread_text(copy) +
               ", random " + spread_text(random) + "; loss of the first fine-tuning batch: copy " +
               spread_text(first_losses(rep.extension, by_copy)) + ", random " +
               spread_text(first_losses(rep.extension, by_random));
  c.reproduced = curve_above(copy, random);
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

ClaimVerdict press_alibi(const Measured& m) {
  const auto &alibi = m.alibi, &sin = m.sinusoidal;
  ClaimVerdict c;
  c.claim =
      "Press et al. 2022 (ALiBi): a linear bias on the attention scores, trained at L, "
      "extrapolates past L where the sinusoidal encoding does not";
  c.published =
      "WikiText-103: ALiBi trained at L = 1024 reaches at 2048 the perplexity of a sinusoidal "
      "model trained at 2048 (and trains 11% faster); sinusoidal trained at 512: 20.05 at 512, "
      "43.54 at 1012";
  c.rule = alibi.name + "'s mean exact match over " + m.near_range + " more than " +
           fixed(kPressDrop, 2) + " x its mean over " + m.in_range + ", and above " + sin.name +
           "'s over " + m.near_range + " by " + fixed(kAlibiMargin, 2) +
           " or more (means over seeds)";
  if (!alibi.n.present || !sin.n.present || alibi.n.in.empty() || alibi.n.near.empty() ||
      sin.n.near.empty()) {
    return not_measured(c);
  }
  c.measured = alibi.name + " exact match: " + spread_text(alibi.n.in) + " over " + m.in_range +
               ", " + spread_text(alibi.n.near) + " over " + m.near_range + ", " +
               spread_text(alibi.n.far) + " over " + range(m.L + 1, alibi.n.far_end) + "; " +
               sin.name + " " + spread_text(sin.n.near) + " over " + m.near_range;
  const double near = mean(alibi.n.near);
  c.reproduced = near > kPressDrop * mean(alibi.n.in) && near >= mean(sin.n.near) + kAlibiMargin;
  return c;
}

// The RoPE scalings' claims read the library's method names: none (extrapolation), linear
// (position interpolation), yarn.
ClaimVerdict chen(const DemoReport& rep, const Measured& m) {
  ClaimVerdict c;
  c.claim =
      "Chen et al. 2023: position interpolation (linear) recovers past the trained length "
      "within a short fine-tuning, where extrapolation (no scaling) does not";
  c.published =
      "LLaMA 7B-65B extended to 32768 positions within 1000 fine-tuning steps; interpolating "
      "beats extrapolating by orders of magnitude in perplexity at 2-4x the trained length";
  const std::string ext = range(m.L + 1, rep.extended_train_len);
  const std::string& no_scaling = rope_scaling_methods().front();
  c.rule = curve_rule("linear", no_scaling, ext);
  const auto& runs = rep.rope_extension;
  const auto linear = curve_areas(runs, "linear", m.L + 1, rep.extended_train_len);
  const auto none = curve_areas(runs, no_scaling, m.L + 1, rep.extended_train_len);
  if (linear.empty() || none.empty()) return not_measured(c);
  const std::size_t probe = std::min<std::size_t>(1, runs.front().curve.size() - 1);
  c.measured = "exact match over " + ext + ", mean over the curve: linear " + spread_text(linear) +
               ", none " + spread_text(none) + "; at step " +
               std::to_string(runs.front().curve[probe].first) + ": linear " +
               spread_text(curve_point(runs, "linear", probe, m.L + 1, rep.extended_train_len)) +
               ", none " +
               spread_text(curve_point(runs, no_scaling, probe, m.L + 1, rep.extended_train_len));
  c.reproduced = curve_above(linear, none);
  return c;
}

ClaimVerdict peng(const DemoReport& rep, const Measured& m) {
  ClaimVerdict c;
  c.claim =
      "Peng et al. 2023 (YaRN): YaRN does better than position interpolation before "
      "fine-tuning, and needs fewer fine-tuning steps";
  c.published =
      "LLaMA-2-7B at 16k without fine-tuning, WikiText perplexity: linear 54.48, YaRN 6.60 "
      "(llama.cpp PR #2268); 10x fewer tokens and 2.5x fewer training steps than earlier methods";
  const std::size_t L2 = rep.extended_train_len;
  const std::string all = range(1, L2), ext = range(m.L + 1, L2);
  c.rule = "yarn's exact match over " + all + " before fine-tuning above linear's by more than " +
           fixed(kCurveMargin, 2) + ", and yarn's over " + ext +
           " averaged over the fine-tuning curve's points at least linear's (means over seeds)";
  const auto& runs = rep.rope_extension;
  const auto yarn0 = curve_point(runs, "yarn", 0, 1, L2);
  const auto linear0 = curve_point(runs, "linear", 0, 1, L2);
  const auto yarn = curve_areas(runs, "yarn", m.L + 1, L2);
  const auto linear = curve_areas(runs, "linear", m.L + 1, L2);
  if (yarn0.empty() || linear0.empty() || yarn.empty() || linear.empty()) return not_measured(c);
  c.measured = "exact match over " + all + " before fine-tuning: yarn " + spread_text(yarn0) +
               ", linear " + spread_text(linear0) + "; over " + ext +
               ", mean over the curve: yarn " + spread_text(yarn) + ", linear " +
               spread_text(linear);
  c.reproduced = mean(yarn0) > mean(linear0) + kCurveMargin && mean(yarn) >= mean(linear);
  return c;
}

}  // namespace

std::span<const ClaimRole> claim_roles() {
  return kClaimRoles;
}

const EncodingSpec* encoding_of(const ClaimRole& role) {
  const EncodingSpec* found = nullptr;
  for (const auto* e : encodings()) {
    if (!e->in_demo || !role.matches(*e)) continue;
    if (found != nullptr) {
      throw std::logic_error("claims: the role '" + std::string(role.role) +
                             "' matches encodings " + std::string(found->name) + " and " +
                             std::string(e->name) +
                             ": give one a property (lab/encodings/encoding.hpp) that tells them "
                             "apart");
    }
    found = e;
  }
  return found;
}

std::vector<ClaimVerdict> judge_claims(const DemoReport& rep) {
  const Measured m = measure(rep);
  return {vaswani(m), press(m),       ruoss(m),     longformer(rep, m),
          nope(m),    press_alibi(m), chen(rep, m), peng(rep, m)};
}

}  // namespace posemb::lab
