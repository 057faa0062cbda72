// The lab's one configuration (lab/config.hpp) and its encodings (lab/encodings/encoding.hpp):
// every limit accepted at its ends and refused past them with a ConfigError naming the field; the
// registry; the model's tensor list (checkpoint order); the learned table as a
// LearnedPositionalEmbedding that records the rows training reached; micro-batch gradient
// buffers equal to the model's own gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"

namespace posemb::lab {
namespace {

RunConfig valid_run() {
  RunConfig r = testing::default_run();
  r.task.train_len = 4;
  r.task.alphabet = 4;
  r.model.vocab_size = task_vocab_size(r.task);
  r.model.d_model = 16;
  r.model.n_heads = 2;
  r.model.d_ff = 32;
  r.model.max_seq_len = symbols::tokens(r.task.train_len);
  r.train.batch = 8;
  r.train.micro_batch = 2;
  r.train.warmup = 2;
  return r;
}

// Expects validate() to throw a ConfigError whose fields include `field`.
void expect_refused(const RunConfig& r, const std::string& field, const std::string& what) {
  try {
    validate_run(r);
    ADD_FAILURE() << what << ": accepted";
  } catch (const ConfigError& e) {
    const auto& f = e.fields();
    EXPECT_NE(std::find(f.begin(), f.end(), field), f.end())
        << what << ": the error names fields other than " << field << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos)
        << "a lab message names a CLI flag: " << e.what();
  }
}

struct IntField {
  std::string field;
  Limit<std::size_t> limit;
  std::function<void(RunConfig&, std::size_t)> set;
};

TEST(LabConfig, EveryIntegerLimitIsAcceptedAtItsEndsAndRefusedPastThem) {
  const std::vector<IntField> fields = {
      {"model.d_model", limits::d_model,
       [](RunConfig& r, std::size_t v) {
         r.model.d_model = v;
         r.model.n_heads = 1;
       }},
      {"model.n_layers", limits::n_layers,
       [](RunConfig& r, std::size_t v) { r.model.n_layers = v; }},
      {"model.n_heads", limits::n_heads,
       [](RunConfig& r, std::size_t v) {
         r.model.n_heads = v;
         r.model.d_model = std::max<std::size_t>(v, 1) * 2;
       }},
      {"model.d_ff", limits::d_ff, [](RunConfig& r, std::size_t v) { r.model.d_ff = v; }},
      {"model.max_seq_len", limits::max_seq_len,
       [](RunConfig& r, std::size_t v) {
         r.model.max_seq_len = v;
         r.task.train_len = 1;  // the shortest table the task allows: 4 rows
       }},
      {"task.alphabet", limits::alphabet,
       [](RunConfig& r, std::size_t v) {
         r.task.alphabet = v;
         r.model.vocab_size = task_vocab_size(r.task);
       }},
      {"task.train_len", limits::train_len,
       [](RunConfig& r, std::size_t v) {
         r.task.train_len = v;
         r.model.max_seq_len = symbols::tokens(v);
       }},
      {"train.batch", limits::batch, [](RunConfig& r, std::size_t v) { r.train.batch = v; }},
      {"train.micro_batch", limits::micro_batch,
       [](RunConfig& r, std::size_t v) { r.train.micro_batch = v; }},
      {"train.steps", limits::steps, [](RunConfig& r, std::size_t v) { r.train.steps = v; }},
      {"train.warmup", limits::warmup, [](RunConfig& r, std::size_t v) { r.train.warmup = v; }},
  };
  for (const auto& f : fields) {
    for (std::size_t v : {f.limit.min, f.limit.max}) {
      RunConfig r = valid_run();
      f.set(r, v);
      if (f.field == "model.max_seq_len" && v < 4) continue;  // below the task's need
      EXPECT_NO_THROW(validate_run(r)) << f.field << " = " << v;
    }
    if (f.limit.min > 0) {
      RunConfig r = valid_run();
      f.set(r, f.limit.min - 1);
      expect_refused(r, f.field, f.field + " below its minimum");
    }
    RunConfig r = valid_run();
    f.set(r, f.limit.max + 1);
    expect_refused(r, f.field, f.field + " above its maximum");
  }
}

TEST(LabConfig, FloatLimitsAndCrossChecks) {
  auto refused = [](auto set, const std::string& field) {
    RunConfig r = valid_run();
    set(r);
    expect_refused(r, field, field);
  };
  refused([](RunConfig& r) { r.train.lr = 0.0f; }, "train.lr");
  refused([](RunConfig& r) { r.train.lr = NAN; }, "train.lr");
  refused([](RunConfig& r) { r.train.lr = INFINITY; }, "train.lr");
  refused([](RunConfig& r) { r.train.beta1 = 1.0f; }, "train.beta1");
  refused([](RunConfig& r) { r.train.beta2 = -0.1f; }, "train.beta2");
  refused([](RunConfig& r) { r.train.min_lr_ratio = 1.5f; }, "train.min_lr_ratio");
  refused([](RunConfig& r) { r.train.weight_decay = -1.0f; }, "train.weight_decay");
  refused([](RunConfig& r) { r.train.grad_clip = -1.0f; }, "train.grad_clip");
  refused([](RunConfig& r) { r.model.init_std = 0.0; }, "model.init_std");
  refused([](RunConfig& r) { r.model.rope_base = -2.0; }, "model.rope_base");
  refused([](RunConfig& r) { r.model.d_model = 10, r.model.n_heads = 3; }, "model.n_heads");
  refused([](RunConfig& r) { r.model.max_seq_len = 9; }, "model.max_seq_len");  // needs 10
  refused([](RunConfig& r) { r.model.vocab_size = 9; }, "model.vocab_size");
  refused(
      [](RunConfig& r) {
        r.model.pe = "sinusoidal";  // no table, yet rows given
      },
      "model.max_seq_len");
  refused(
      [](RunConfig& r) {
        r.model.pe = "rope";
        r.model.max_seq_len = 0;
        r.model.d_model = 6;  // head_dim 3: odd
      },
      "model.d_model");
  refused([](RunConfig& r) { r.model.pe = "banana"; }, "model.pe");
  RunConfig big = valid_run();
  big.train.lr = 1e30f;  // large but finite: accepted (training then stops on a non-finite loss)
  EXPECT_NO_THROW(validate_run(big));
  EvalConfig e;
  e.min_len = 5;
  e.max_len = 2;
  EXPECT_THROW(e.validate(), ConfigError);
  e.min_len = 1;
  e.max_len = limits::eval_len.max + 1;
  EXPECT_THROW(e.validate(), ConfigError);
  e.max_len = limits::eval_len.max;
  EXPECT_NO_THROW(e.validate());
  e.samples = 0;
  EXPECT_THROW(e.validate(), ConfigError);
}

TEST(LabConfig, LimitContainsAndText) {
  EXPECT_TRUE(limits::beta.contains(0.0));
  EXPECT_FALSE(limits::beta.contains(1.0));
  EXPECT_FALSE(limits::lr.contains(NAN));
  EXPECT_FALSE(limits::lr.contains(INFINITY));
  EXPECT_EQ(limits::beta.text(), "[0, 1)");
  EXPECT_EQ(limits::lr.text(), "(0, inf)");
  EXPECT_EQ(limits::train_len.text(), "[1, 1024]");
}

TEST(LabConfig, JsonRoundTrip) {
  RunConfig r = valid_run();
  r.model.pe = "learned-randomized";
  r.model.max_seq_len = 256;
  r.task.kind = "reverse";
  r.train.lr = 3e-3f;
  const RunConfig back = RunConfig::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.model.pe, "learned-randomized");
  EXPECT_EQ(back.task.kind, "reverse");
}

TEST(Encodings, RegistryNamesAreUniqueAndFound) {
  std::set<std::string> names;
  for (const auto* e : encodings()) {
    EXPECT_TRUE(names.insert(std::string(e->name)).second) << e->name << " registered twice";
    EXPECT_EQ(&find_encoding(e->name), e);
    EXPECT_FALSE(e->summary.empty()) << e->name;
    EXPECT_NE(e->make, nullptr) << e->name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"learned", "learned-randomized", "sinusoidal", "rope",
                                          "alibi", "t5-bias", "none"}));
  try {
    (void)find_encoding("xpos");
    FAIL() << "an unknown encoding was found";
  } catch (const ConfigError& e) {
    for (const auto& n : names) EXPECT_NE(std::string(e.what()).find(n), std::string::npos);
    EXPECT_EQ(e.fields(), std::vector<std::string>{"model.pe"});
  }
}

// What a spec says agrees with what its encoding does, and the model's tensors come in
// checkpoint order: wte.weight, the encoding's table, the blocks, lnf, head.
TEST(Encodings, SpecAgreesWithTheModel) {
  for (const auto* e : encodings()) {
    RunConfig r = valid_run();
    r.model.pe = std::string(e->name);
    r.model.max_seq_len = e->default_table_rows(symbols::tokens(r.task.train_len));
    r.model.relative_bias = e->relative_bias_for(symbols::tokens(r.task.train_len));
    ASSERT_NO_THROW(validate_run(r)) << e->name;
    Model model(r.model);
    const auto slots = model.tensors();
    EXPECT_EQ(e->has_table, model.encoding().learned_table() != nullptr) << e->name;
    EXPECT_EQ(e->has_table, !e->table_tensor.empty()) << e->name;
    // The encoding's tensors are what its spec describes, and only a trained one has any.
    const auto shapes = e->tensor_shapes(r.model);
    const auto enc = model.encoding().tensors();
    EXPECT_EQ(e->trainable, !enc.empty()) << e->name;
    ASSERT_EQ(enc.size(), shapes.size()) << e->name;
    for (std::size_t k = 0; k < enc.size(); ++k) {
      EXPECT_EQ(enc[k].name, shapes[k].name) << e->name;
      EXPECT_EQ(enc[k].value.rows(), shapes[k].rows) << e->name;
      EXPECT_EQ(enc[k].value.cols(), shapes[k].cols) << e->name;
      EXPECT_EQ(slots[1 + k].name, shapes[k].name) << e->name;
    }
    EXPECT_EQ(e->has_relative_buckets(), !r.model.relative_bias.empty()) << e->name;
    ASSERT_GE(slots.size(), 3u);
    EXPECT_EQ(slots[0].name, "wte.weight");
    if (e->has_table) {
      EXPECT_GE(r.model.max_seq_len, symbols::tokens(r.task.train_len)) << e->name;
      EXPECT_EQ(slots[1].name, e->table_tensor);
      EXPECT_EQ(slots[1].value.rows(), r.model.max_seq_len);
      // The slot is the layer's own table: no copy.
      EXPECT_EQ(slots[1].value.data(), model.encoding().learned_table()->table().data());
    } else {
      EXPECT_EQ(r.model.max_seq_len, 0u) << e->name;
      EXPECT_EQ(slots[1 + enc.size()].name, "blocks.0.ln1.weight");
    }
    EXPECT_EQ(slots.back().name, "head.weight");
    std::set<std::string> unique;
    for (const auto& s : slots) EXPECT_TRUE(unique.insert(s.name).second) << s.name;
  }
}

// Gradients into micro-batch buffers are the gradients into the model, bit for bit.
TEST(Encodings, GradientBuffersEqualTheModelsGradients) {
  for (const auto* e : encodings()) {
    RunConfig r = valid_run();
    r.model.pe = std::string(e->name);
    r.model.max_seq_len = e->default_table_rows(symbols::tokens(r.task.train_len));
    r.model.relative_bias = e->relative_bias_for(symbols::tokens(r.task.train_len));
    Model model(r.model);
    model.initialize(3);
    Batch batch;
    find_task(r.task.kind)
        .train_batch(batch, r.task, 4, 1, 0, e->train_positions, r.model.max_seq_len);
    Activations acts(r.model, 4, batch.tokens.cols());
    model.reserve_positions(batch.tokens.cols() + r.model.max_seq_len);
    model.forward(acts, batch.tokens, batch.positions, batch.targets);
    model.zero_grad();
    model.backward(acts);
    Gradients g = model.make_gradients();
    model.backward(acts, &g);
    const auto slots = model.tensors();
    std::size_t enc = 0;
    for (const auto& s : slots) {
      const auto shapes = e->tensor_shapes(r.model);
      const bool is_enc = std::any_of(shapes.begin(), shapes.end(),
                                      [&](const TensorInfo& t) { return t.name == s.name; });
      const float* mine =
          is_enc ? g.encoding[enc++].data()
                 : g.arena.data() + (s.grad.data() - model.params().grad_arena().data());
      EXPECT_EQ(std::memcmp(mine, s.grad.data(), s.grad.size() * sizeof(float)), 0)
          << e->name << ": " << s.name;
    }
  }
}

// The learned table is a LearnedPositionalEmbedding: after training on sequences of at most
// symbols::tokens(train_len) tokens, exactly the rows past them are untrained; with randomized
// positions, rows of the whole table are reached.
TEST(Encodings, LearnedTableRecordsTheRowsTrainingReached) {
  RunConfig r = valid_run();
  r.model.max_seq_len = 40;
  r.train.steps = 3;
  Trainer tr(r);
  const auto* table = tr.model().encoding().learned_table();
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->untrained_rows().size(), 40u);
  for (int s = 0; s < 3; ++s) tr.train_step();
  std::vector<std::size_t> want;
  for (std::size_t row = symbols::tokens(r.task.train_len); row < 40; ++row) want.push_back(row);
  EXPECT_EQ(table->untrained_rows(), want);
  // learned-randomized: positions sampled from the whole table.
  r.model.pe = "learned-randomized";
  r.model.max_seq_len = 64;
  Trainer rnd(r);
  for (int s = 0; s < 3; ++s) rnd.train_step();
  const auto left = rnd.model().encoding().learned_table()->untrained_rows();
  EXPECT_LT(left.size(), 64u - symbols::tokens(r.task.train_len));
}

// The work of each length, for the time left of eval's progress: in evaluate()'s order (the
// longest first), growing with the length, 0 for the lengths the learned table cannot hold, and
// summing to evaluation_work.
TEST(EvaluationWork, ByLengthLongestFirstZeroBeyondTheTable) {
  EvalConfig ec;
  ec.min_len = 2;
  ec.max_len = 9;
  ec.samples = 3;
  const ModelConfig learned = testing::tiny_model_config("learned", 14);  // n <= 6 fits
  TaskConfig copy;
  copy.kind = testing::kCopy;
  const std::vector<double> w = evaluation_work_by_length(learned, copy, ec);
  ASSERT_EQ(w.size(), 8u);  // n = 9, 8, ..., 2
  for (std::size_t k = 0; k < w.size(); ++k) {
    const std::size_t n = ec.max_len - k;
    if (symbols::tokens(n) > 14) {
      EXPECT_EQ(w[k], 0.0) << "n = " << n;
    } else {
      EXPECT_GT(w[k], 0.0) << "n = " << n;
      if (k > 0 && w[k - 1] > 0.0) {
        EXPECT_LT(w[k], w[k - 1]) << "n = " << n;
      }
    }
  }
  double sum = 0.0;
  for (const double x : w) sum += x;
  EXPECT_DOUBLE_EQ(sum, evaluation_work(learned, copy, ec));
  // A computed encoding decodes every length; the attention makes long lengths cost more than
  // in proportion.
  const std::vector<double> r =
      evaluation_work_by_length(testing::tiny_model_config("rope", 0), copy, ec);
  ASSERT_EQ(r.size(), 8u);
  for (const double x : r) EXPECT_GT(x, 0.0);
  EXPECT_GT(r.front() / r.back(), static_cast<double>(symbols::tokens(9)) / symbols::tokens(2));
}

}  // namespace
}  // namespace posemb::lab
