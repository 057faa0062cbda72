// Extending a trained model: Trainer::from_checkpoint (weights from a checkpoint, the table
// from a resized file, new task and training settings, a fresh optimizer, the lineage kept), and
// the demo's summary, whose verdicts follow the numbers by the stated rules.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lab/report/results.hpp"
#include "lab/report/summary.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

RunConfig tiny(const std::string& pe = "learned") {
  RunConfig r = testing::tiny_run_config(pe, 3, 4, 32);
  r.train.batch = 8;
  r.train.micro_batch = 4;
  r.train.warmup = 2;
  r.train.steps = 6;
  return r;
}

// Trains `cfg` to the end and saves it at path.
void train_and_save(const RunConfig& cfg, const std::string& path) {
  Trainer tr(cfg);
  while (tr.step() < cfg.train.steps) tr.train_step();
  tr.save(path);
}

bool same_bits(MatrixView<const float> a, MatrixView<const float> b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (std::size_t r = 0; r < a.rows(); ++r) {
    if (std::memcmp(a.row(r).data(), b.row(r).data(), a.cols() * sizeof(float)) != 0) return false;
  }
  return true;
}

TEST(InitFrom, StartsFromTheWeightsWithTheResizedTableAndAFreshOptimizer) {
  test::TempDir dir;
  const std::string base = dir.file("base.safetensors"), table = dir.file("wpe.safetensors");
  train_and_save(tiny(), base);
  const PositionTable t = load_position_table(base);
  save_position_table(table, resize_table(t, symbols::tokens(6), ResizeMethod::copy));
  RunConfig next = read_checkpoint(base).run;
  next.task.train_len = 6;
  next.train.steps = 4;
  next.train.lr = 1e-3f;
  Trainer ft = Trainer::from_checkpoint(base, next, table);
  EXPECT_EQ(ft.step(), 0u);
  EXPECT_EQ(ft.config().model.max_seq_len, symbols::tokens(6));
  EXPECT_EQ(ft.config().task.train_len, 6u);
  EXPECT_EQ(ft.config().train.lr, 1e-3f);
  const Checkpoint ck = read_checkpoint(base);
  for (const auto& s : ft.model().tensors()) {
    if (s.name == "wpe.weight") {
      EXPECT_TRUE(same_bits(s.value, load_position_table(table).values)) << "the resized table";
    } else {
      EXPECT_TRUE(same_bits(s.value, ck.tensor(s.name))) << s.name << " from the checkpoint";
    }
  }
  EXPECT_NE(ft.lineage().find(base), std::string::npos) << ft.lineage();
  EXPECT_NE(ft.lineage().find("copy 8 -> 14"), std::string::npos) << ft.lineage();
  // It trains, is deterministic, and its checkpoints keep the lineage, also after a resume.
  Trainer again = Trainer::from_checkpoint(base, next, table);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ft.train_step(), again.train_step());
  }
  const std::string out = dir.file("ft.safetensors");
  ft.save(out);
  const Checkpoint fck = read_checkpoint(out);
  EXPECT_EQ(fck.lineage, ft.lineage());
  EXPECT_EQ(fck.adamw_steps, 2) << "a fresh optimizer: only the new run's steps";
  EXPECT_NE(fck.file.metadata.at("posemb.provenance").find("copy 8 -> 14"), std::string::npos);
  Trainer resumed = Trainer::load(out);
  EXPECT_EQ(resumed.lineage(), ft.lineage());
  EXPECT_EQ(resumed.train_step(), ft.train_step()) << "a resumed fine-tuning run continues";
  // Without a table file: the checkpoint's own table.
  RunConfig same = read_checkpoint(base).run;
  same.train.steps = 2;
  const Trainer own = Trainer::from_checkpoint(base, same);
  EXPECT_EQ(own.config().model.max_seq_len, symbols::tokens(3));
  EXPECT_EQ(own.lineage().find("resize"), std::string::npos) << own.lineage();
  // A whole checkpoint resized in place: its table and its lineage come along.
  const std::string whole = dir.file("whole.safetensors");
  const TensorFile f = read_safetensors(base);
  const ResizedFile rf =
      replace_position_table(f, resize_table(t, symbols::tokens(6), ResizeMethod::copy));
  write_safetensors(whole, rf.tensors, rf.metadata);
  const Trainer w = Trainer::from_checkpoint(whole, next);
  EXPECT_EQ(w.config().model.max_seq_len, symbols::tokens(6));
  EXPECT_NE(w.lineage().find("copy 8 -> 14"), std::string::npos) << w.lineage();
}

TEST(InitFrom, RefusesAnotherModelATooShortTableAndATableForAComputedEncoding) {
  test::TempDir dir;
  const std::string base = dir.file("base.safetensors");
  train_and_save(tiny(), base);
  auto fields_of = [&](const RunConfig& r, const std::string& table = {}) {
    try {
      (void)Trainer::from_checkpoint(base, r, table);
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
      return e.fields();
    }
    return std::vector<std::string>{"(accepted)"};
  };
  RunConfig r = read_checkpoint(base).run;
  r.model.d_model = 32;
  EXPECT_EQ(fields_of(r), std::vector<std::string>{"model.d_model"});
  r = read_checkpoint(base).run;
  r.model.pe = "sinusoidal";
  r.model.max_seq_len = 0;
  EXPECT_EQ(fields_of(r), std::vector<std::string>{"model.pe"});
  r = read_checkpoint(base).run;
  r.task.train_len = 4;  // needs 10 rows, the table has 8
  EXPECT_EQ(fields_of(r), std::vector<std::string>{"task.train_len"});
  r = read_checkpoint(base).run;
  r.task.alphabet = 5;
  r.model.vocab_size = task_vocab_size(r.task);
  EXPECT_EQ(fields_of(r), std::vector<std::string>{"model.vocab_size"});
  const std::string rope = dir.file("rope.safetensors");
  train_and_save(tiny("rope"), rope);
  EXPECT_THROW((void)Trainer::from_checkpoint(rope, read_checkpoint(rope).run, base),
               std::invalid_argument);
}

// A report with one seed per encoding, lengths 1..6 (L = 2): in distribution n = 1, 2; just
// past L n = 3..5. Each encoding's exact match: `in` at n <= 2, `past` beyond.
RunResults run(const std::string& pe, double in, double past, bool table = false) {
  RunResults r;
  r.pe = pe;
  r.seed = 1;
  if (table) r.max_seq_len = symbols::tokens(2);
  for (std::size_t n = 1; n <= 6; ++n) {
    LengthResult l;
    l.length = n;
    l.beyond_table = table && n > 2;
    l.exact_match = n <= 2 ? in : past;
    l.token_accuracy = l.exact_match;
    r.results.push_back(l);
  }
  return r;
}

ExtensionRun ext(const std::string& method, std::vector<double> curve, double first_loss) {
  ExtensionRun e;
  e.method = method;
  e.seed = 1;
  e.first_loss = first_loss;
  for (std::size_t k = 0; k < curve.size(); ++k) {
    std::vector<LengthResult> at;
    for (std::size_t n = 3; n <= 4; ++n) {
      LengthResult l;
      l.length = n;
      l.exact_match = curve[k];
      at.push_back(l);
    }
    e.curve.emplace_back(10 * k, at);
  }
  return e;
}

DemoReport report(double sin_in, double sin_past, double rand_past, double none_in,
                  double none_past, std::vector<double> copy, std::vector<double> random) {
  DemoReport rep;
  rep.task.train_len = 2;
  rep.extended_train_len = 4;
  rep.runs = {run("learned", 1.0, 0.0, true), run("learned-randomized", 0.95, rand_past),
              run("sinusoidal", sin_in, sin_past), run("rope", 1.0, 0.0),
              run("none", none_in, none_past)};
  rep.extension = {ext("copy", std::move(copy), 1.0), ext("random", std::move(random), 2.0)};
  return rep;
}

std::vector<bool> verdicts(const DemoReport& rep) {
  std::vector<bool> v;
  for (const auto& c : judge_claims(rep)) v.push_back(c.reproduced);
  return v;
}

TEST(Summary, VerdictsFollowTheNumbersByTheStatedRules) {
  // Vaswani, Press, Ruoss, Longformer, Kazemnejad: all reproduced ...
  const DemoReport yes = report(0.99, 0.1, 0.5, 0.95, 0.3, {0.0, 0.5, 0.9}, {0.0, 0.1, 0.5});
  const auto v = verdicts(yes);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(std::vector<bool>(v.begin(), v.begin() + 5),
            (std::vector<bool>{true, true, true, true, true}));
  // ... and each one flips when its own numbers cross its rule.
  EXPECT_EQ(verdicts(report(0.95, 0.1, 0.5, 0.95, 0.3, {0, .5, .9}, {0, .1, .5}))[0], false)
      << "learned 1.00 vs sinusoidal 0.95: more than 0.03 apart";
  EXPECT_EQ(verdicts(report(0.99, 0.6, 0.7, 0.95, 0.7, {0, .5, .9}, {0, .1, .5}))[1], false)
      << "sinusoidal keeps 0.6 of 0.99 past L";
  EXPECT_EQ(verdicts(report(0.99, 0.1, 0.29, 0.95, 0.3, {0, .5, .9}, {0, .1, .5}))[2], false)
      << "learned-randomized below 0.30 past L";
  EXPECT_EQ(verdicts(report(0.99, 0.4, 0.35, 0.95, 0.5, {0, .5, .9}, {0, .1, .5}))[2], false)
      << "learned-randomized not above sinusoidal past L";
  EXPECT_EQ(verdicts(report(0.99, 0.1, 0.5, 0.95, 0.3, {0, .1, .5}, {0, .5, .9}))[3], false)
      << "random's curve above copy's";
  EXPECT_EQ(verdicts(report(0.99, 0.1, 0.5, 0.95, 0.3, {0, .01, .05}, {0, .01, .02}))[3], false)
      << "copy above random by 0.01 on average: within the margin";
  EXPECT_EQ(verdicts(report(0.99, 0.1, 0.5, 0.85, 0.3, {0, .5, .9}, {0, .1, .5}))[4], false)
      << "NoPE not near-perfect in distribution";
  EXPECT_EQ(verdicts(report(0.99, 0.1, 0.5, 0.95, 0.12, {0, .5, .9}, {0, .1, .5}))[4], false)
      << "NoPE past L not 0.05 above sinusoidal";
  // The markdown names every claim, its verdict, and the rules.
  const std::string md = summary_markdown(yes);
  for (const char* s : {"Vaswani", "Press", "Ruoss", "Longformer", "Kazemnejad", "**reproduced**",
                        "How each verdict is decided", "beyond the table", "| 2 (L) |"}) {
    EXPECT_NE(md.find(s), std::string::npos) << s;
  }
  EXPECT_NE(summary_markdown(report(0.5, 0.1, 0.5, 0.95, 0.3, {0, .5}, {0, .1}))
                .find("not reproduced at this budget"),
            std::string::npos);
}

// A RoPE scaling's fine-tuning run (L = 2, 2L = 4): exact match `in0` at n = 1, 2 before any
// update (1 afterwards), and past[k] at n = 3, 4 at the curve's point k (steps 0, 100, ...).
ExtensionRun scaled(const std::string& method, double in0, const std::vector<double>& past) {
  ExtensionRun e;
  e.method = method;
  e.seed = 1;
  for (std::size_t k = 0; k < past.size(); ++k) {
    std::vector<LengthResult> at;
    for (std::size_t n = 1; n <= 4; ++n) {
      LengthResult l;
      l.length = n;
      l.exact_match = n > 2 ? past[k] : k == 0 ? in0 : 1.0;
      at.push_back(l);
    }
    e.curve.emplace_back(100 * k, at);
  }
  e.after = e.curve.back().second;
  return e;
}

// ALiBi exact match 1 in distribution and alibi_past past L, sinusoidal sin_past; the RoPE
// scalings none, linear and yarn (in0 and curve each).
DemoReport long_report(double alibi_past, double sin_past, const std::vector<double>& none,
                       double linear0, const std::vector<double>& linear, double yarn0,
                       const std::vector<double>& yarn) {
  DemoReport rep = report(0.99, sin_past, 0.5, 0.95, 0.3, {0.0, 0.5, 0.9}, {0.0, 0.1, 0.5});
  rep.runs.push_back(run("alibi", 1.0, alibi_past));
  rep.rope_extension = {scaled("none", 0.5, none), scaled("linear", linear0, linear),
                        scaled("yarn", yarn0, yarn)};
  return rep;
}

TEST(Summary, LongContextClaimsFollowTheirRules) {
  // Press (ALiBi), Chen, Peng: all reproduced ...
  const std::vector<double> lo{0, .1, .5}, mid{0, .5, .9}, hi{0, .6, .95};
  const DemoReport yes = long_report(0.6, 0.1, lo, 0.1, mid, 0.5, hi);
  auto tail = [](const DemoReport& r) {
    const auto v = verdicts(r);
    return std::vector<bool>(v.begin() + 5, v.end());
  };
  EXPECT_EQ(tail(yes), (std::vector<bool>{true, true, true}));
  // ... and each flips when its own numbers cross its rule.
  EXPECT_EQ(tail(long_report(0.45, 0.1, lo, 0.1, mid, 0.5, hi))[0], false)
      << "ALiBi keeps 0.45 of 1.0 past L: not more than half";
  EXPECT_EQ(tail(long_report(0.6, 0.58, lo, 0.1, mid, 0.5, hi))[0], false)
      << "ALiBi past L not 0.05 above sinusoidal";
  EXPECT_EQ(tail(long_report(0.6, 0.1, {0, .49, .9}, 0.1, mid, 0.5, hi))[1], false)
      << "linear's curve above none's by 0.0033 on average: within the margin";
  EXPECT_EQ(tail(long_report(0.6, 0.1, lo, 0.1, mid, 0.12, hi))[2], false)
      << "yarn above linear before fine-tuning by 0.01 over n = 1..4: within the margin";
  EXPECT_EQ(tail(long_report(0.6, 0.1, lo, 0.1, mid, 0.5, {0, .3, .9}))[2], false)
      << "yarn's curve below linear's";
  // The markdown has the RoPE part: step 0 over n = 1..2L, the curve, the best scaling.
  const std::string md = summary_markdown(yes);
  for (const char* s : {"Press et al. 2022 (ALiBi)", "Chen et al. 2023", "Peng et al. 2023",
                        "## Extending RoPE", "before fine-tuning, n = 1..4",
                        "Best after fine-tuning, mean exact match over n = 3..4: yarn"}) {
    EXPECT_NE(md.find(s), std::string::npos) << s;
  }
}

TEST(Summary, MissingRunsAreNotMeasuredNotReproduced) {
  DemoReport rep;
  rep.task.train_len = 2;
  rep.runs = {run("learned", 1.0, 0.0, true)};
  for (const auto& c : judge_claims(rep)) {
    EXPECT_FALSE(c.reproduced) << c.claim;
    EXPECT_EQ(c.measured, "not measured") << c.claim;
  }
}

TEST(Results, SpreadsOverSeeds) {
  const Spread s = spread_of({0.5, 1.0, 0.75});
  EXPECT_DOUBLE_EQ(s.mean, 0.75);
  EXPECT_EQ(s.min, 0.5);
  EXPECT_EQ(s.max, 1.0);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(spread_of({}).count, 0u);
  const RunResults a = run("learned", 1.0, 0.0, true), b = run("learned", 0.5, 0.0, true);
  const auto by = spread_by_length({&a, &b});
  ASSERT_EQ(by.size(), 6u);
  EXPECT_DOUBLE_EQ(by[0].exact.mean, 0.75);
  EXPECT_TRUE(by[2].beyond_table);
  EXPECT_EQ(mean_exact_match(a, 1, 2), std::optional<double>(1.0));
  EXPECT_FALSE(mean_exact_match(a, 1, 3).has_value()) << "n = 3 is beyond the table";
  RunResults shorter = b;
  shorter.results.pop_back();
  EXPECT_THROW((void)spread_by_length({&a, &shorter}), std::invalid_argument);
  const ExtensionRun e = ext("copy", {0.0, 0.25}, 1.0);
  EXPECT_EQ(curve_mean_exact(e, 3, 4), (std::vector<double>{0.0, 0.25}));
}

TEST(Summary, QuickRunIsLabelledAndDoesNotRefute) {
  // A report whose claims are not met: a full run says "not reproduced", a quick run says at
  // the top that it is one and leaves those claims "not judged".
  DemoReport rep;
  rep.task.train_len = 2;
  rep.runs = {run("learned", 1.0, 0.0, true)};
  const std::string full = summary_markdown(rep);
  EXPECT_NE(full.find("not reproduced at this budget"), std::string::npos);
  EXPECT_EQ(full.find("quick run"), std::string::npos);
  rep.quick = true;
  const std::string quick = summary_markdown(rep);
  EXPECT_EQ(quick.find("not reproduced"), std::string::npos);
  EXPECT_NE(quick.find("not judged (quick run)"), std::string::npos);
  const std::size_t label = quick.find("**A quick run**");
  ASSERT_NE(label, std::string::npos);
  EXPECT_LT(label, quick.find("| published claim |")) << "the label comes before the claims";
}

}  // namespace
}  // namespace posemb::lab
