// The text demo (`posemb demo --task text`, lab/experiment/lm_demo.hpp): its plan beside the
// symbol demo's (which stays as it was), and the rules of its claims (lab/report/lm_claims.hpp) on
// hand-made bits per byte: every claim reproduced on numbers made to meet it, and each one not
// reproduced, with a reason, when only its own numbers are changed to miss its rule.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/experiment/demo_plan.hpp"
#include "lab/report/lm_claims.hpp"
#include "lab/report/lm_results.hpp"
#include "lab/report/summary.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/run.hpp"

namespace posemb::lab {
namespace {

constexpr std::size_t L = 64;

TEST(LmDemoPlan, EveryEncodingWithT5sBiasLengthsToEightLAndBoundedBytes) {
  DemoOptions o;
  o.task = "text";
  const DemoPlan plan = plan_demo(o);
  EXPECT_TRUE(plan.language);
  std::vector<std::string> expected;
  for (const auto* e : encodings()) {
    if (e->in_demo || e->trained_bias()) expected.emplace_back(e->name);
  }
  EXPECT_EQ(plan.encodings, expected);
  EXPECT_EQ(plan.encodings.size(), 7u);
  EXPECT_EQ(plan.train_len, L);
  EXPECT_EQ(plan.eval.lengths, (std::vector<std::size_t>{L, 2 * L, 4 * L, 8 * L}));
  EXPECT_EQ(plan.eval.text_bytes, find_task("text").demo.eval_bytes);
  EXPECT_GT(plan.eval.text_bytes, 0u);
  EXPECT_EQ(plan.methods.size(), 3u);  // copy, interpolate, random
  EXPECT_EQ(plan.rope_factors, (std::vector<double>{2.0, 4.0}));
  EXPECT_EQ(plan.rope_methods, (std::vector<std::string>{"none", "linear", "ntk", "yarn"}));
  const RunConfig r = plan.run(plan.encodings.front(), 1);
  EXPECT_EQ(r.model.d_model, find_task("text").demo.d_model);
  EXPECT_EQ(r.train.batch, find_task("text").demo.batch);
  EXPECT_EQ(r.train.lr, find_task("text").demo.lr);
  for (const double f : plan.rope_factors) {
    for (const auto& m : plan.rope_methods) {
      const RunConfig x = plan.rope_extension_run(1, m, f);
      EXPECT_NO_THROW(validate_run(x)) << m << " " << f;
      EXPECT_EQ(x.task.train_len, static_cast<std::size_t>(f) * L);
    }
  }
  EXPECT_NO_THROW(check_demo(plan));
}

TEST(LmDemoPlan, TheSymbolDemoKeepsItsModelMethodsAndScalings) {
  const DemoPlan plan = plan_demo({});
  EXPECT_FALSE(plan.language);
  for (const auto& pe : plan.encodings) EXPECT_TRUE(find_encoding(pe).in_demo) << pe;
  EXPECT_EQ(plan.methods.size(), 4u);
  EXPECT_EQ(plan.rope_methods, rope_scaling_methods());
  EXPECT_EQ(plan.rope_factors, (std::vector<double>{2.0}));
  EXPECT_TRUE(plan.eval.lengths.empty());
  EXPECT_EQ(plan.eval.text_bytes, 0u);
  const RunConfig r = plan.run(plan.encodings.front(), 1);
  EXPECT_EQ(r.model.d_model, 32u);
  EXPECT_EQ(r.model.d_ff, 128u);
  EXPECT_EQ(r.train.batch, 32u);
  EXPECT_EQ(r.train.lr, 3e-3f);
}

// A length scored at `bits` bits per byte (or beyond the table when NaN).
LengthResult at(std::size_t n, double bits) {
  LengthResult l;
  l.length = n;
  l.scoring = Scoring::teacher_forced;
  if (std::isnan(bits)) {
    l.beyond_table = true;
  } else {
    l.loss = bits * std::numbers::ln2;
  }
  return l;
}

// Bits per byte by encoding (registry name) and length; three seeds 0.01 apart around it.
using Curves = std::map<std::string, std::map<std::size_t, double>>;

// Extension numbers: (method, factor) -> {step 0 at sL, after at sL}.
using Ext = std::map<std::pair<std::string, double>, std::pair<double, double>>;

DemoReport report(const Curves& curves, const Ext& table, const Ext& rope) {
  DemoReport rep;
  rep.task.kind = "text";
  rep.task.train_len = L;
  for (const auto& [pe, by_len] : curves) {
    for (int k = 0; k < 3; ++k) {
      RunResults r;
      r.pe = pe;
      r.seed = static_cast<std::uint64_t>(k + 1);
      for (const auto& [n, bits] : by_len) r.results.push_back(at(n, bits + 0.01 * (k - 1)));
      rep.runs.push_back(r);
    }
  }
  const auto add = [&](const Ext& ext, std::vector<ExtensionRun>& into) {
    for (const auto& [key, v] : ext) {
      for (int k = 0; k < 3; ++k) {
        ExtensionRun er;
        er.method = key.first;
        er.factor = key.second;
        er.seed = static_cast<std::uint64_t>(k + 1);
        er.steps = 100;
        const std::size_t n = static_cast<std::size_t>(key.second) * L;
        er.curve.push_back({0, {at(L, 2.5), at(n, v.first)}});
        er.after = {at(L, 2.5), at(n, v.second)};
        into.push_back(er);
      }
    }
  };
  add(table, rep.extension);
  add(rope, rep.rope_extension);
  return rep;
}

// The name of the registered encoding with a property.
std::string named(bool (*pred)(const EncodingSpec&)) {
  return std::string(find_encoding_if(pred)->name);
}

struct Numbers {
  Curves curves;
  Ext table, rope;
};

// Numbers that meet every rule.
Numbers meeting_every_rule() {
  const double nan = NAN;
  Numbers x;
  const auto flat = [](double v) {
    return std::map<std::size_t, double>{{L, v}, {2 * L, v}, {4 * L, v}, {8 * L, v}};
  };
  x.curves[named([](const EncodingSpec& e) {
    return e.has_table && e.train_positions == PositionMode::contiguous;
  })] = {{L, 2.50}, {2 * L, nan}, {4 * L, nan}, {8 * L, nan}};
  x.curves[named([](const EncodingSpec& e) {
    return e.train_positions == PositionMode::randomized;
  })] = {{L, 2.55}, {2 * L, 2.60}, {4 * L, 2.65}, {8 * L, 2.70}};
  x.curves[named([](const EncodingSpec& e) {
    return e.site == EncodingSite::input && !e.trainable;
  })] = {{L, 2.52}, {2 * L, 3.00}, {4 * L, 3.50}, {8 * L, 4.00}};
  x.curves[named([](const EncodingSpec& e) { return e.site == EncodingSite::attention; })] = {
      {L, 2.45}, {2 * L, 2.90}, {4 * L, 3.20}, {8 * L, 3.60}};
  x.curves[named([](const EncodingSpec& e) { return e.site == EncodingSite::nowhere; })] = {
      {L, 2.55}, {2 * L, 2.60}, {4 * L, 2.70}, {8 * L, 2.80}};
  x.curves[named([](const EncodingSpec& e) {
    return e.site == EncodingSite::scores && !e.trainable;
  })] = flat(2.48);
  x.curves[named([](const EncodingSpec& e) { return e.trained_bias(); })] = flat(2.47);
  x.table = {{{"copy", 2.0}, {2.6, 2.4}},
             {{"interpolate", 2.0}, {2.7, 2.4}},
             {{"random", 2.0}, {4.0, 2.5}}};
  for (const double f : {2.0, 4.0}) {
    x.rope[{"none", f}] = {4.0, 2.7};
    x.rope[{"linear", f}] = {3.0, 2.50};
    x.rope[{"ntk", f}] = {2.9, 2.50};
    x.rope[{"yarn", f}] = {2.8, 2.50};
  }
  return x;
}

std::vector<ClaimVerdict> judged(const Numbers& x) {
  return judge_lm_claims(report(x.curves, x.table, x.rope));
}

// The claims, each by the start of its text.
const std::vector<std::string> kClaims = {"Vaswani",
                                          "Press et al. 2022: the sinusoidal",
                                          "Press et al. 2022: ALiBi",
                                          "Raffel",
                                          "Ruoss",
                                          "Kazemnejad",
                                          "Beltagy",
                                          "Chen",
                                          "Peng"};

TEST(LmClaims, EveryRuleReproducedOnNumbersThatMeetIt) {
  const auto v = judged(meeting_every_rule());
  ASSERT_EQ(v.size(), kClaims.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const ClaimVerdict& c = v[i];
    EXPECT_EQ(c.claim.rfind(kClaims[i], 0), 0u) << c.claim;
    EXPECT_TRUE(c.reproduced) << c.claim << ": " << c.measured << " / " << c.reason;
    EXPECT_TRUE(c.reason.empty()) << c.claim;
    EXPECT_FALSE(c.rule.empty()) << c.claim;
    EXPECT_FALSE(c.published.empty()) << c.claim;
  }
  // The summary carries the claims, the table by length and the extensions.
  const Numbers x = meeting_every_rule();
  const std::string md = lm_summary_markdown(report(x.curves, x.table, x.rope));
  EXPECT_NE(md.find("## Published claims"), std::string::npos);
  EXPECT_NE(md.find("**reproduced**"), std::string::npos);
  EXPECT_NE(md.find("beyond the table"), std::string::npos);
  EXPECT_NE(md.find("| yarn | 4 |"), std::string::npos);
}

// Each rule fails on numbers changed for it alone, naming why; the others still hold.
TEST(LmClaims, EachRuleCanFail) {
  const auto enc = [](bool (*pred)(const EncodingSpec&)) { return named(pred); };
  const std::string sin =
      enc([](const EncodingSpec& e) { return e.site == EncodingSite::input && !e.trainable; });
  const std::string alibi =
      enc([](const EncodingSpec& e) { return e.site == EncodingSite::scores && !e.trainable; });
  const std::string t5 = enc([](const EncodingSpec& e) { return e.trained_bias(); });
  const std::string rnd =
      enc([](const EncodingSpec& e) { return e.train_positions == PositionMode::randomized; });
  const std::string none =
      enc([](const EncodingSpec& e) { return e.site == EncodingSite::nowhere; });
  const std::string learned = enc([](const EncodingSpec& e) {
    return e.has_table && e.train_positions == PositionMode::contiguous;
  });
  // In kClaims' order: a change that makes that claim (alone) miss its rule.
  const std::vector<std::function<void(Numbers&)>> changes = {
      [&](Numbers& x) { x.curves[learned][L] = 2.30; },
      [&](Numbers& x) { x.curves[sin][8 * L] = 2.55; },
      [&](Numbers& x) { x.curves[alibi][8 * L] = 2.60; },
      [&](Numbers& x) { x.curves[t5][4 * L] = 2.60; },
      [&](Numbers& x) { x.curves[rnd][8 * L] = 3.00; },
      [&](Numbers& x) { x.curves[none][2 * L] = 3.10; },
      [](Numbers& x) {
        x.table[{"random", 2.0}].first = 2.9;
      },
      [](Numbers& x) {
        x.rope[{"linear", 4.0}].second = 2.7;
      },
      [](Numbers& x) {
        x.rope[{"yarn", 2.0}].first = 3.0;
      },
  };
  ASSERT_EQ(changes.size(), kClaims.size());
  for (std::size_t i = 0; i < changes.size(); ++i) {
    Numbers x = meeting_every_rule();
    changes[i](x);
    const auto v = judged(x);
    ASSERT_EQ(v.size(), kClaims.size());
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (k == i) {
        EXPECT_FALSE(v[k].reproduced) << v[k].claim << ": " << v[k].measured;
        EXPECT_FALSE(v[k].reason.empty()) << v[k].claim;
      } else {
        EXPECT_TRUE(v[k].reproduced) << kClaims[i] << " changed: " << v[k].claim;
      }
    }
  }
}

// A claim whose runs are missing is not reproduced and says so.
TEST(LmClaims, MissingRunsAreNotMeasured) {
  for (const auto& c : judge_lm_claims(DemoReport{})) {
    EXPECT_FALSE(c.reproduced) << c.claim;
    EXPECT_EQ(c.measured, "not measured") << c.claim;
  }
}

}  // namespace
}  // namespace posemb::lab
