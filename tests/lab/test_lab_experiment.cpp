// The lab's experiment API (lab/experiment/demo_plan.hpp) and the data it is driven by: the
// registry's properties and name list (lab/encodings/encoding.hpp), the rules for a run from a
// checkpoint plus overrides (lab::merge_run), the demo's plan, and the one per-length results
// writer.
#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/demo_files.hpp"
#include "lab/experiment/demo_run.hpp"
#include "lab/report/results.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/train/run.hpp"

namespace posemb::lab {
namespace {

TEST(Registry, NameListDefaultAndPropertyLookup) {
  std::vector<std::string> names;
  for (const auto* e : encodings()) names.emplace_back(e->name);
  EXPECT_EQ(encoding_name_list(), names);
  EXPECT_EQ(default_encoding_name(), names.front());
  EXPECT_TRUE(ModelConfig().pe.empty());  // the settings name no encoding by default
  EXPECT_EQ(RunChoices().pe, names.front());
  // The properties the demo and the summary look encodings up by (the tests may spell names).
  auto one = [](bool (*pred)(const EncodingSpec&)) {
    const EncodingSpec* e = find_encoding_if(pred);
    return e == nullptr ? std::string("(none)") : std::string(e->name);
  };
  EXPECT_EQ(one([](const EncodingSpec& e) {
              return e.has_table && e.train_positions == PositionMode::contiguous;
            }),
            "learned");
  EXPECT_EQ(one([](const EncodingSpec& e) {
              return e.has_table && e.train_positions == PositionMode::randomized;
            }),
            "learned-randomized");
  EXPECT_EQ(
      one([](const EncodingSpec& e) { return e.site == EncodingSite::input && e.any_position(); }),
      "sinusoidal");
  EXPECT_EQ(one([](const EncodingSpec& e) { return e.site == EncodingSite::attention; }), "rope");
  EXPECT_EQ(one([](const EncodingSpec& e) { return e.site == EncodingSite::nowhere; }), "none");
  EXPECT_EQ(one([](const EncodingSpec&) { return false; }), "(none)");
}

RunConfig checkpoint_run() {
  RunConfig r;
  r.task.kind = "copy";
  r.model.pe = "learned";
  r.task.alphabet = 6;
  r.task.train_len = 5;
  r.model.vocab_size = task_vocab_size(r.task);
  r.model.d_model = 24;
  r.train.steps = 300;
  r.train.lr = 2e-3f;
  r.train.seed = 7;
  return r;
}

TEST(MergeRun, TheFieldsGivenComeFromTheOverridesTheRestFromTheCheckpoint) {
  const RunConfig base = checkpoint_run();
  RunOverrides ov;
  ov.values.task.kind = "reverse";
  ov.values.task.alphabet = 10;
  ov.values.task.train_len = 9;
  ov.values.train.steps = 40;
  ov.values.train.seed = 99;
  ov.values.train.lr = 0.5f;      // not given: stays the checkpoint's
  ov.values.model.d_model = 128;  // not given
  ov.fields = {"task.kind", "task.alphabet", "task.train_len", "train.steps", "train.seed"};
  const RunConfig r = merge_run(base, ov);
  EXPECT_EQ(r.task.kind, "reverse");
  EXPECT_EQ(r.task.alphabet, 10u);
  EXPECT_EQ(r.task.train_len, 9u);
  EXPECT_EQ(r.train.steps, 40u);
  EXPECT_EQ(r.train.seed, 99u);
  EXPECT_EQ(r.train.lr, base.train.lr);
  EXPECT_EQ(r.model.d_model, base.model.d_model);
  EXPECT_EQ(r.model.vocab_size, 14u);  // the new alphabet's
  EXPECT_EQ(merge_run(base, {}).to_json(), base.to_json());
}

TEST(MergeRun, EveryTaskAndTrainingFieldIsOverridableNoModelField) {
  for (const char* f :
       {"task.kind", "task.alphabet", "task.train_len", "train.batch", "train.micro_batch",
        "train.steps", "train.lr", "train.warmup", "train.min_lr_ratio", "train.weight_decay",
        "train.beta1", "train.beta2", "train.grad_clip", "train.seed"}) {
    EXPECT_TRUE(overridable_from_checkpoint(f)) << f;
  }
  for (const char* f : {"model.pe", "model.d_model", "model.n_layers", "model.n_heads",
                        "model.d_ff", "model.max_seq_len", "model.rope_base", "model.init_std",
                        "model.embed_init_std", "", "train.sort_by_length"}) {
    EXPECT_FALSE(overridable_from_checkpoint(f)) << f;
  }
  RunOverrides ov;
  ov.fields = {"train.steps", "model.d_model"};
  try {
    (void)merge_run(checkpoint_run(), ov);
    FAIL() << "a model field was merged";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"model.d_model"});
  }
}

TEST(DemoPlan, EveryRegisteredEncodingTheExtendedOneAndTheOverrides) {
  DemoOptions o;
  o.quick = true;
  o.seed = 5;
  o.steps = 12;
  const DemoPlan plan = plan_demo(o);
  std::vector<std::string> in_demo;
  for (const auto* e : encodings()) {
    if (e->in_demo) in_demo.emplace_back(e->name);
  }
  EXPECT_EQ(plan.encodings, in_demo);
  EXPECT_EQ(plan.encodings.size(), 6u);
  EXPECT_TRUE(find_encoding(plan.extended).has_table);
  EXPECT_EQ(find_encoding(plan.extended).train_positions, PositionMode::contiguous);
  EXPECT_EQ(plan.steps, 12u);
  EXPECT_EQ(plan.eval.seed, 1005u);
  for (const auto& pe : plan.encodings) {
    const RunConfig r = plan.run(pe, 6);
    EXPECT_NO_THROW(validate_run(r)) << pe;
    EXPECT_EQ(r.train.seed, 6u);
    const auto& spec = find_encoding(pe);
    if (spec.train_positions == PositionMode::randomized) {
      EXPECT_EQ(r.model.max_seq_len, plan.randomized_rows) << pe;
      EXPECT_EQ(r.train.steps, plan.randomized_steps) << pe;
    } else {
      EXPECT_EQ(r.model.max_seq_len, spec.default_table_rows(symbols::tokens(plan.train_len)))
          << pe;
      EXPECT_EQ(r.train.steps, 12u) << pe;
    }
  }
  const RunConfig ext = plan.extension_run(5);
  EXPECT_EQ(ext.task.train_len, 2 * plan.train_len);
  EXPECT_EQ(ext.model.max_seq_len, symbols::tokens(2 * plan.train_len));
  EXPECT_EQ(ext.train.steps, plan.extension_steps);
  // RoPE: the rotary encoding with every scaling method, factor 2 over its trained positions.
  ASSERT_FALSE(plan.rotary.empty());
  EXPECT_EQ(find_encoding(plan.rotary).site, EncodingSite::attention);
  EXPECT_EQ(plan.rope_methods, rope_scaling_methods());
  EXPECT_EQ(plan.rope_probe_every, 50u);
  for (const auto& m : plan.rope_methods) {
    const RunConfig r = plan.rope_extension_run(5, m, plan.rope_factor);
    EXPECT_NO_THROW(validate_run(r)) << m;
    EXPECT_EQ(r.model.pe, plan.rotary);
    EXPECT_EQ(r.task.train_len, 2 * plan.train_len);
    EXPECT_EQ(r.train.steps, plan.rope_extension_steps);
    EXPECT_EQ(r.model.rope_scaling.method, m);
    if (m != "none") {
      EXPECT_EQ(r.model.rope_scaling.factor, 2.0) << m;
      EXPECT_EQ(r.model.rope_scaling.original_len, symbols::tokens(plan.train_len)) << m;
    }
  }
  EXPECT_NO_THROW(check_demo(plan));
  DemoOptions bad = o;
  bad.eval_max = 100000;
  EXPECT_THROW(check_demo(plan_demo(bad)), ConfigError);
  // Seeds: the last of `seeds` consecutive seeds must not pass 2^64 - 1 (they would wrap to 0).
  DemoOptions last = o;
  last.seeds = 2;
  last.seed = UINT64_MAX - 1;
  EXPECT_NO_THROW((void)plan_demo(last));
  last.seed = UINT64_MAX;
  try {
    (void)plan_demo(last);
    ADD_FAILURE() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), (std::vector<std::string>{"demo.seed", "demo.seeds"}));
  }
  last.seeds = 0;
  EXPECT_THROW((void)plan_demo(last), ConfigError);
}

// Every task plans a demo whose runs carry it; the positional symbol tasks train longer than copy.
TEST(DemoPlan, EveryTaskPlansItsRunsAndTheHarderOnesTrainLonger) {
  DemoOptions copy;
  const DemoPlan base = plan_demo(copy);
  for (const auto& name : task_name_list()) {
    DemoOptions o;
    o.task = name;
    const DemoPlan plan = plan_demo(o);
    for (const auto& pe : plan.encodings) {
      const RunConfig r = plan.run(pe, 1);
      EXPECT_NO_THROW(validate_run(r)) << name << " " << pe;
      EXPECT_EQ(r.task.kind, name) << pe;
    }
    EXPECT_EQ(plan.extension_run(1).task.kind, name);
    if (find_task(name).scoring != Scoring::greedy) continue;  // the symbol tasks are compared
    EXPECT_GE(plan.steps, base.steps) << name;
    if (name == "reverse" || name == "odd-first") {
      EXPECT_GT(plan.steps, base.steps) << name;
    }
  }
}

// The demo's time left weighs every stage by its estimated work: both stages count, each grows
// with its own steps and evaluation (and only with its own), and one seed is a third of three.
TEST(DemoPlan, WorkOfEachStageFollowsItsOwnSteps) {
  DemoOptions o;
  o.quick = true;
  const std::vector<double> w = demo_work(plan_demo(o));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_GT(w[0], 0.0);
  EXPECT_GT(w[1], 0.0);
  DemoOptions longer = o;
  longer.extension_steps = 2 * plan_demo(o).extension_steps;
  const std::vector<double> l = demo_work(plan_demo(longer));
  EXPECT_EQ(l[0], w[0]);
  EXPECT_GT(l[1], w[1]);
  DemoOptions trained = o;
  trained.steps = 2 * plan_demo(o).steps;
  const std::vector<double> t = demo_work(plan_demo(trained));
  EXPECT_GT(t[0], w[0]);
  EXPECT_EQ(t[1], w[1]);
  DemoOptions one = o;
  one.seeds = 1;
  const std::vector<double> s = demo_work(plan_demo(one));
  EXPECT_NEAR(3 * s[0], w[0], 1e-9 * w[0]);
  EXPECT_NEAR(3 * s[1], w[1], 1e-9 * w[1]);
}

TEST(Results, OnePerLengthWriterForEveryFile) {
  LengthResult ok;
  ok.length = 3;
  ok.exact_match = 0.5;
  ok.token_accuracy = 0.125;
  LengthResult beyond;
  beyond.length = 4;
  beyond.beyond_table = true;
  const ResultColumns greedy = {{Scoring::greedy}, false};
  EXPECT_EQ(length_csv_header(greedy), "status,exact_match,token_accuracy");
  EXPECT_EQ(length_csv_fields(ok, greedy), "ok,0.500000,0.125000");
  EXPECT_EQ(length_csv_fields(beyond, greedy), "beyond_table,,");
  RunResults run;
  run.pe = "learned";
  run.seed = 2;
  run.max_seq_len = 10;
  run.results = {ok, beyond};
  EXPECT_EQ(results_csv({run}),
            "pe,max_seq_len,length,status,exact_match,token_accuracy,seed\n"
            "learned,10,3,ok,0.500000,0.125000,2\n"
            "learned,10,4,beyond_table,,,2\n");
  // The teacher-forced scorer's columns beside greedy decoding's, from the same writer: each
  // length fills its own scorer's columns, loss and bits per token (loss / ln 2).
  LengthResult tf;
  tf.length = 5;
  tf.scoring = Scoring::teacher_forced;
  tf.loss = std::log(2.0);
  RunResults both = run;
  both.results.push_back(tf);
  const ResultColumns two = {{Scoring::greedy, Scoring::teacher_forced}, false};
  EXPECT_EQ(columns_of({both}).scorings, two.scorings);
  EXPECT_FALSE(columns_of({both}).windows);
  EXPECT_EQ(length_csv_fields(tf, two), "ok,,,0.693147,1.000000");
  EXPECT_EQ(length_csv_fields(ok, two), "ok,0.500000,0.125000,,");
  EXPECT_EQ(results_csv({both}),
            "pe,max_seq_len,length,status,exact_match,token_accuracy,loss,bits_per_token,seed\n"
            "learned,10,3,ok,0.500000,0.125000,,,2\n"
            "learned,10,4,beyond_table,,,,,2\n"
            "learned,10,5,ok,,,0.693147,1.000000,2\n");
  TaskConfig copy3;
  copy3.kind = "copy";
  copy3.train_len = 3;
  EXPECT_NE(results_json(copy3, {both}).find("\"bits_per_token\": 1.0"), std::string::npos);
  EXPECT_EQ(buckets_csv({both}), "pe,seed,length,begin,end,count,bits_per_token\n");
}

// A length scored on the windows of a text adds its columns (whole numbers as such) and its
// buckets, in the CSV, the JSON and buckets.csv; a greedy length in the same file leaves them
// empty.
TEST(Results, WindowsColumnsAndBuckets) {
  LengthResult w;
  w.length = 8;
  w.scoring = Scoring::teacher_forced;
  w.loss = std::log(2.0) * 3;  // 3 bits per byte
  w.counted = 96;
  w.dropped = 5;
  w.sliding = {4, std::log(2.0) * 2.5, 100, 1};
  w.buckets = {{0, 4, std::log(2.0) * 4 * 20, 20}, {4, 8, std::log(2.0) * 2 * 20, 20}};
  LengthResult g;
  g.length = 3;
  g.exact_match = 1.0;
  RunResults run;
  run.pe = "alibi";
  run.seed = 7;
  run.results = {g, w};
  const ResultColumns c = columns_of({run});
  EXPECT_TRUE(c.windows);
  EXPECT_EQ(length_csv_header(c),
            "status,exact_match,token_accuracy,loss,bits_per_token,scored,dropped,sliding_stride,"
            "sliding_bits_per_token");
  EXPECT_EQ(length_csv_fields(w, c), "ok,,,2.079442,3.000000,96,5,4,2.500000");
  EXPECT_EQ(length_csv_fields(g, c), "ok,1.000000,0.000000,,,,,,");
  EXPECT_EQ(buckets_csv({run}),
            "pe,seed,length,begin,end,count,bits_per_token\n"
            "alibi,7,8,0,4,20,4.000000\n"
            "alibi,7,8,4,8,20,2.000000\n");
  TaskConfig text;
  text.kind = "text";
  text.train_len = 4;
  text.corpus_identity = {"book.txt", 1234, std::string(64, 'a')};
  const std::string json = results_json(text, {run});
  for (const char* part :
       {"\"corpus\": {", "\"name\": \"book.txt\"", "\"bytes\": 1234", "\"scored\": 96",
        "\"dropped\": 5", "\"sliding_stride\": 4", "\"sliding_bits_per_token\": 2.5",
        "\"buckets\": [", "\"begin\": 4", "\"bits_per_token\": 2.0"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " in " << json;
  }
}

}  // namespace
}  // namespace posemb::lab
