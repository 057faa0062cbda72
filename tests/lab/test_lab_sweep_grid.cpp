// The lab's run choices and sweep grid (lab/config.hpp complete_run, lab/experiment/sweep.hpp): the
// defaults that depend on other choices, the grid's order, names and groups, and every refusal
// naming its field.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/sweep.hpp"
#include "lab/experiment/sweep_files.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/train/run.hpp"

namespace posemb::lab {
namespace {

std::vector<std::string> fields_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.fields();
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

TEST(CompleteRun, FillsTheDefaultsFromTheOtherChoices) {
  RunChoices c;
  c.pe = "learned";
  c.task = "reverse";
  c.run.task.train_len = 5;
  c.run.task.alphabet = 6;
  c.run.model.d_model = 24;
  c.run.model.n_heads = 2;
  const RunConfig r = complete_run(c);
  const EncodingSpec& spec = find_encoding("learned");
  EXPECT_EQ(r.task.kind, "reverse");
  EXPECT_EQ(r.model.pe, "learned");
  EXPECT_EQ(r.model.d_ff, 4u * 24u);
  EXPECT_EQ(r.model.vocab_size, task_vocab_size(r.task));
  EXPECT_EQ(r.model.max_seq_len, spec.default_table_rows(symbols::tokens(5)));
  EXPECT_EQ(r.model.embed_init_std, spec.default_embed_init_std);
  c.d_ff = 40;
  c.max_seq_len = 64;
  c.run.model.embed_init_std = 0.5;
  const RunConfig given = complete_run(c);
  EXPECT_EQ(given.model.d_ff, 40u);
  EXPECT_EQ(given.model.max_seq_len, 64u);
  EXPECT_EQ(given.model.embed_init_std, 0.5);
}

TEST(CompleteRun, RefusesNamingTheField) {
  RunChoices c;
  c.pe = "no-such-encoding";
  EXPECT_EQ(fields_of([&] { complete_run(c); }), std::vector<std::string>{"model.pe"});
  c = RunChoices();
  c.task = "shuffle";
  EXPECT_EQ(fields_of([&] { complete_run(c); }), std::vector<std::string>{"task.kind"});
  c = RunChoices();
  c.run.model.n_heads = 3;  // 64 is not a multiple of 3
  const auto f = fields_of([&] { complete_run(c); });
  EXPECT_FALSE(f.empty());
}

TEST(SweepGrid, EveryCombinationSeedInnermostNamedByTheAxesThatVary) {
  RunChoices base;
  base.run.model.d_model = 16;
  base.run.model.n_heads = 2;
  SweepAxes a;
  a.pe = {"learned", "rope"};
  a.train_len = {4, 6};
  a.lr = {0.003f};
  const std::vector<std::uint64_t> seeds{7, 9};
  const auto grid = make_grid(base, a, seeds);
  ASSERT_EQ(grid.size(), 2u * 2u * 2u);
  std::size_t i = 0;
  for (const std::size_t len : a.train_len) {
    for (const auto& pe : a.pe) {
      for (const auto seed : seeds) {
        const SweepPoint& p = grid[i++];
        EXPECT_EQ(p.seed, seed);
        EXPECT_EQ(p.run.run.train.seed, seed);
        EXPECT_EQ(p.run.run.task.train_len, len);
        EXPECT_EQ(p.run.run.model.pe, pe);
        EXPECT_EQ(p.run.run.train.lr, 0.003f);
        EXPECT_EQ(p.group, "train_len=" + std::to_string(len));
        EXPECT_EQ(p.run.name, p.group + " pe=" + pe + " seed=" + std::to_string(seed));
        EXPECT_EQ(p.run.eval.max_len, 3 * len);  // eval_max 0: three times the training length
        RunChoices c = base;
        c.pe = pe;
        c.run.task.train_len = len;
        c.run.train.lr = 0.003f;
        c.run.train.seed = seed;
        EXPECT_EQ(p.run.run.model.max_seq_len, complete_run(c).model.max_seq_len);
      }
    }
  }
}

TEST(SweepGrid, TableRowsOnlyForEncodingsWithATable) {
  RunChoices base;
  base.max_seq_len = 100;
  SweepAxes a;
  a.pe = {"learned", "sinusoidal"};
  const auto grid = make_grid(base, a, {1});
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(grid[0].run.run.model.max_seq_len, 100u);
  EXPECT_EQ(grid[1].run.run.model.max_seq_len,
            find_encoding("sinusoidal").default_table_rows(symbols::tokens(a.train_len[0])));
  EXPECT_EQ(grid[0].group, "");
}

TEST(SweepGrid, RefusesTooManyRunsAnEmptyAxisAndAnInvalidPoint) {
  RunChoices base;
  SweepAxes a;
  a.lr.clear();
  for (int i = 1; i <= 1000; ++i) a.lr.push_back(1e-4f * static_cast<float>(i));
  std::vector<std::uint64_t> seeds(101);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = i;
  EXPECT_EQ(fields_of([&] { make_grid(base, a, seeds); }), std::vector<std::string>{"sweep.runs"});
  seeds.resize(100);  // exactly kMaxSweepRuns runs is allowed
  EXPECT_NO_THROW(EXPECT_EQ(make_grid(base, a, seeds).size(), kMaxSweepRuns));
  EXPECT_EQ(fields_of([&] { make_grid(base, a, {}); }), std::vector<std::string>{"sweep.runs"});
  // A product that overflows std::size_t is refused, not wrapped.
  SweepAxes huge;
  huge.alphabet = std::vector<std::size_t>(1u << 16, 8);
  huge.d_model = std::vector<std::size_t>(1u << 16, 64);
  huge.batch = std::vector<std::size_t>(1u << 16, 32);
  huge.steps = std::vector<std::size_t>(1u << 16, 10);
  EXPECT_EQ(fields_of([&] { make_grid(base, huge, {1}); }), std::vector<std::string>{"sweep.runs"});
  SweepAxes bad;
  bad.pe = {"learned", "nope"};
  EXPECT_EQ(fields_of([&] { make_grid(base, bad, {1}); }), std::vector<std::string>{"model.pe"});
  // A value twice on an axis (the same runs twice under one name) names the axis's field.
  SweepAxes twice;
  twice.train_len = {4, 8, 4};
  EXPECT_EQ(fields_of([&] { make_grid(base, twice, {1}); }),
            std::vector<std::string>{"task.train_len"});
  twice = SweepAxes{};
  twice.pe = {"rope", "learned", "rope"};
  EXPECT_EQ(fields_of([&] { make_grid(base, twice, {1}); }), std::vector<std::string>{"model.pe"});
  EXPECT_EQ(fields_of([&] {
              make_grid(base, SweepAxes{}, {3, 1, 3});
            }),
            std::vector<std::string>{"train.seed"});
  EXPECT_NO_THROW((void)make_grid(base, SweepAxes{}, {UINT64_MAX - 1, UINT64_MAX}));
  // NaN among the learning rates: the run's own check refuses it (the duplicate check sorts
  // them without tripping on it).
  twice = SweepAxes{};
  twice.lr = {1e-3f, std::nanf(""), 2e-3f, std::nanf("")};
  EXPECT_EQ(fields_of([&] { make_grid(base, twice, {1}); }), std::vector<std::string>{"train.lr"});
}

TEST(SweepGrid, RopeScalingsEvaluateRotatingRunsWithEachMethodAndFactorAddingNoRun) {
  RunChoices base;
  SweepAxes a;
  a.pe = {"learned", "rope"};
  a.rope_scaling = {"none", "yarn", "linear"};
  a.rope_factor = {2, 4};
  const auto grid = make_grid(base, a, {1});
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_TRUE(grid[0].run.eval_scalings.empty()) << "learned has no rotation to scale";
  const auto& s = grid[1].run.eval_scalings;
  ASSERT_EQ(s.size(), 5u);
  const std::vector<std::pair<std::string, double>> want = {
      {"none", 1.0}, {"yarn", 2.0}, {"yarn", 4.0}, {"linear", 2.0}, {"linear", 4.0}};
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(s[k].method, want[k].first) << k;
    EXPECT_EQ(s[k].factor, want[k].second) << k;
  }
  const std::vector<std::string> factor{"model.rope_factor"};
  SweepAxes b = a;
  b.rope_factor.clear();  // yarn without a factor
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }), factor);
  b.rope_scaling = {"none"};
  b.rope_factor = {2};  // a factor nothing uses
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }), factor);
  b.rope_scaling.clear();
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }), factor);
  b.rope_scaling = {"ntk"};
  b.rope_factor = {0.5};  // below 1: the model's own check
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }), factor);
  b.rope_factor = {2, 2};
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }), factor);
  b.rope_factor = {2};
  b.rope_scaling = {"yarn", "none", "yarn"};
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }),
            std::vector<std::string>{"model.rope_scaling"});
  b.rope_scaling = {"banana"};
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }),
            std::vector<std::string>{"model.rope_scaling"});
  b.rope_scaling = {"none"};
  b.rope_factor.clear();
  b.pe = {"learned", "alibi"};
  EXPECT_EQ(fields_of([&] { make_grid(base, b, {1}); }),
            (std::vector<std::string>{"model.rope_scaling", "model.pe"}));
}

// Each scaled evaluation becomes an entry of its own in the files; a failed run stays one.
TEST(SweepReport, ExpandsEachRopeScalingIntoAnEntryWithItsColumn) {
  RunChoices base;
  SweepAxes a;
  a.pe = {"rope", "learned"};
  a.rope_scaling = {"none", "yarn"};
  a.rope_factor = {3};
  a.eval_max = 2;
  auto grid = make_grid(base, a, {7, 8});
  ASSERT_EQ(grid.size(), 4u);
  auto length = [](std::size_t n, double exact) {
    LengthResult l;
    l.length = n;
    l.exact_match = exact;
    l.token_accuracy = exact;
    l.samples = 1;
    return l;
  };
  std::vector<GridOutcome> out(4);
  for (auto& o : out) o.results.results = {length(1, 0.5), length(2, 0.25)};
  out[0].scaled = {{length(1, 0.5), length(2, 0.25)}, {length(1, 0.75), length(2, 0.125)}};
  out[1].error = "the loss is NaN";  // the second rope run failed: no scaled results
  const auto [points, outcomes] = expand_rope_scalings(grid, out);
  ASSERT_EQ(points.size(), 5u);
  ASSERT_EQ(outcomes.size(), 5u);
  EXPECT_EQ(points[0].run.name, grid[0].run.name + " rope_scaling=none");
  EXPECT_EQ(points[0].rope_scaling, "none");
  EXPECT_EQ(points[1].run.name, grid[0].run.name + " rope_scaling=yarn x3");
  EXPECT_EQ(points[1].rope_scaling, "yarn x3");
  EXPECT_EQ(outcomes[1].results.results[0].exact_match, 0.75);
  EXPECT_EQ(outcomes[1].results.results[1].exact_match, 0.125);
  EXPECT_EQ(points[2].run.name, grid[1].run.name);  // failed: one entry, no scaling
  EXPECT_EQ(points[2].rope_scaling, "");
  EXPECT_EQ(outcomes[2].error, "the loss is NaN");
  EXPECT_EQ(points[3].run.name, grid[2].run.name);  // learned: as it is
  const std::string csv = sweep_csv(points, outcomes);
  EXPECT_NE(csv.find(",final_loss,rope_scaling,length,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",yarn x3,2,ok,0.125000,0.125000\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",none,1,ok,0.500000,0.500000\n"), std::string::npos) << csv;
  const std::string json = sweep_json(points, outcomes);
  EXPECT_NE(json.find("\"rope_scaling\": \"yarn x3\""), std::string::npos);
  EXPECT_NE(json.find("\"rope_scaling\": null"), std::string::npos);
}

}  // namespace
}  // namespace posemb::lab
