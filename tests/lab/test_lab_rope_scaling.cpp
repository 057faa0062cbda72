// RoPE scaling in the lab (ModelConfig::rope_scaling, the rope encoding with the library's
// posemb/rope_scaling.hpp): position interpolation by 2 at positions 2q gives the unscaled
// model's logits at positions q; every method runs; the settings' JSON keeps the scaling (and
// reads settings without one); a run from a checkpoint with a scaling records it in the new
// checkpoint's settings and lineage, and load_model uses it unless given another.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/model/decoder.hpp"
#include "lab/model/model.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

const EncodingSpec& rotary() {
  const EncodingSpec* e =
      find_encoding_if([](const EncodingSpec& s) { return s.site == EncodingSite::attention; });
  if (e == nullptr) throw std::logic_error("no rotary encoding registered");
  return *e;
}

RopeScalingConfig scaling(const std::string& method, double factor, std::size_t l0) {
  RopeScalingConfig r;
  r.method = method;
  r.factor = factor;
  r.original_len = l0;
  return r;
}

// Greedy logits of every step of one sequence of tokens at the given positions (the decoder).
std::vector<float> logits_at(Model& model, const std::vector<TokenId>& tokens,
                             const std::vector<std::int64_t>& pos) {
  Decoder dec(model, 1, tokens.size());
  std::vector<float> out;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const auto l = dec.step(std::span<const TokenId>(&tokens[t], 1),
                            std::span<const std::int64_t>(&pos[t], 1));
    out.insert(out.end(), l.data(), l.data() + l.cols());
  }
  return out;
}

// n = 2L on a model trained at L (L0 = 2L + 2 positions): linear x2 at positions p = 2q rotates
// by 2q * theta / 2 = q * theta, the unscaled model's angle at q, computed the same way (the
// library's long double angle, rounded once): the same logits bit for bit.
TEST(LabRopeScaling, LinearByTwoAtPositionsTwiceTheUnscaledOnes) {
  const std::size_t L = 6, T = symbols::tokens(2 * L);
  ModelConfig plain = testing::tiny_model_config(std::string(rotary().name), 0);
  ModelConfig scaled = plain;
  scaled.rope_scaling = scaling("linear", 2.0, symbols::tokens(L));
  ASSERT_NO_THROW(validate_model(scaled));
  Model a(plain), b(scaled);
  a.initialize(5);
  b.initialize(5);
  a.reserve_positions(T);
  b.reserve_positions(2 * T);
  std::vector<TokenId> tokens(T);
  std::vector<std::int64_t> q(T), p(T);
  for (std::size_t t = 0; t < T; ++t) {
    tokens[t] = static_cast<TokenId>((t * 5 + 1) % plain.vocab_size);
    q[t] = static_cast<std::int64_t>(t);
    p[t] = 2 * q[t];
  }
  const auto want = logits_at(a, tokens, q), got = logits_at(b, tokens, p);
  ASSERT_EQ(want.size(), got.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  // The scaling matters: the scaled model at positions q is another model.
  const auto other = logits_at(b, tokens, q);
  EXPECT_NE(std::memcmp(want.data(), other.data(), want.size() * sizeof(float)), 0);
}

// Every method builds and runs past L0 with finite logits, and changes them there (yarn and
// ntk at every position; dynamic only past L0); none equals the plain model.
TEST(LabRopeScaling, EveryMethodRunsPastTheTrainedLength) {
  const std::size_t L0 = 8, T = 20;
  ModelConfig plain = testing::tiny_model_config(std::string(rotary().name), 0);
  plain.d_model = 16;
  Model base(plain);
  base.initialize(6);
  base.reserve_positions(T);
  std::vector<TokenId> tokens(T);
  std::vector<std::int64_t> pos(T);
  for (std::size_t t = 0; t < T; ++t) {
    tokens[t] = static_cast<TokenId>((t * 3 + 2) % plain.vocab_size);
    pos[t] = static_cast<std::int64_t>(t);
  }
  const auto want = logits_at(base, tokens, pos);
  for (const auto& method : rope_scaling_methods()) {
    ModelConfig cfg = plain;
    if (method != rope_scaling_methods().front()) cfg.rope_scaling = scaling(method, 3.0, L0);
    ASSERT_NO_THROW(validate_model(cfg)) << method;
    Model m(cfg);
    m.initialize(6);
    m.reserve_positions(T);
    const auto got = logits_at(m, tokens, pos);
    for (float v : got) ASSERT_TRUE(std::isfinite(v)) << method;
    const std::size_t V = plain.vocab_size, first = method == "dynamic" ? L0 : 1;
    // Step 0 (position 0) is the same for every method but yarn's attention factor.
    const bool same_all = std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
    const bool same_late = std::memcmp(got.data() + first * V, want.data() + first * V,
                                       (T - first) * V * sizeof(float)) == 0;
    if (method == rope_scaling_methods().front()) {
      EXPECT_TRUE(same_all) << method;
    } else {
      EXPECT_FALSE(same_late) << method << " changes nothing past position " << first;
    }
    if (method == "dynamic") {  // the plain frequencies up to L0
      EXPECT_EQ(std::memcmp(got.data(), want.data(), L0 * V * sizeof(float)), 0);
    }
  }
}

TEST(LabRopeScaling, ConfigRefusesWhatCannotWork) {
  ModelConfig cfg = testing::tiny_model_config(std::string(rotary().name), 0);
  auto refused = [&](const RopeScalingConfig& r, const std::string& field, const std::string& pe) {
    ModelConfig c = cfg;
    c.pe = pe;
    c.max_seq_len = find_encoding(pe).has_table ? 20 : 0;
    c.rope_scaling = r;
    try {
      validate_model(c);
      ADD_FAILURE() << r.text() << " on " << pe << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.fields().front(), field) << e.what();
    }
  };
  const std::string rope(rotary().name);
  refused(scaling("linear", 0.0, 10), "model.rope_factor", rope);
  refused(scaling("linear", std::nan(""), 10), "model.rope_factor", rope);
  refused(scaling("linear", 0.5, 10), "model.rope_factor", rope);
  refused(scaling("linear", 1e308, 10), "model.rope_factor", rope);  // was accepted and run
  refused(scaling("ntk", std::nextafter(limits::rope_factor.max, 1e300), 10), "model.rope_factor",
          rope);
  ModelConfig largest = cfg;
  largest.rope_scaling = scaling("ntk", limits::rope_factor.max, 10);
  EXPECT_NO_THROW(validate_model(largest));
  refused(scaling("yarn", 2.0, 0), "model.rope_scaling", rope);
  refused(scaling("llama3", 2.0, 10), "model.rope_scaling", rope);
  for (const auto* e : encodings()) {
    if (e->site != EncodingSite::attention) {
      refused(scaling("linear", 2.0, 10), "model.rope_scaling", std::string(e->name));
    }
  }
}

// The settings' JSON: a scaling round-trips; settings without one read as none (checkpoints
// written before); a bad scaling object is refused naming it.
TEST(LabRopeScaling, SettingsJsonKeepsTheScaling) {
  RunConfig run = testing::tiny_run_config(std::string(rotary().name), 4, 4, 32);
  const std::string before = run.to_json();
  EXPECT_EQ(before.find("rope_scaling"), std::string::npos);
  EXPECT_EQ(RunConfig::from_json(before).model.rope_scaling, RopeScalingConfig{});
  run.model.rope_scaling = scaling("yarn", 2.5, 10);
  const std::string j = run.to_json();
  EXPECT_EQ(RunConfig::from_json(j).model.rope_scaling, run.model.rope_scaling);
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = j;
    const auto at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    EXPECT_THROW(RunConfig::from_json(t), ConfigError) << t;
  };
  bad("\"method\":\"yarn\"", "\"method\":\"llama3\"");
  bad("\"factor\":2.5", "\"factor\":-1");
  bad("\"original_len\":10", "\"original_len\":10,\"beta\":3");
  bad("\"original_len\":10", "\"original_len\":0");
}

// train --init-from with a scaling: the new run's checkpoint records it (settings, lineage);
// load_model uses it, or the one given (none: the plain rotation).
TEST(LabRopeScaling, FineTuningRecordsTheScaling) {
  test::TempDir dir;
  RunConfig run = testing::tiny_run_config(std::string(rotary().name), 4, 4, 32);
  run.train.steps = 2;
  run.train.warmup = 1;
  run.train.batch = 4;
  run.train.micro_batch = 2;
  Trainer first(run);
  while (first.step() < run.train.steps) first.train_step();
  first.save(dir.file("a.safetensors"));

  RunOverrides ov;
  ov.values = run;
  ov.values.task.train_len = 8;
  ov.fields = {"task.train_len"};
  ov.rope_scaling = scaling("linear", 2.0, 0);
  Trainer tune = Trainer::from_checkpoint(dir.file("a.safetensors"), ov);
  const RopeScalingConfig want = scaling("linear", 2.0, symbols::tokens(4));
  EXPECT_EQ(tune.config().model.rope_scaling, want);
  EXPECT_NE(tune.lineage().find("rope scaling linear x2 over 10 trained positions"),
            std::string::npos)
      << tune.lineage();
  tune.train_step();
  tune.save(dir.file("b.safetensors"));
  const Checkpoint ck = read_checkpoint(dir.file("b.safetensors"));
  EXPECT_EQ(ck.run.model.rope_scaling, want);
  EXPECT_NE(ck.lineage.find("rope scaling linear x2"), std::string::npos) << ck.lineage;

  RunConfig got;
  (void)load_model(dir.file("b.safetensors"), &got);
  EXPECT_EQ(got.model.rope_scaling, want);
  (void)load_model(dir.file("b.safetensors"), &got, {}, RopeScalingConfig{});
  EXPECT_EQ(got.model.rope_scaling, RopeScalingConfig{});
  // Another method on the fine-tuned checkpoint keeps its L0 (the length the rotation was
  // trained at, not the fine-tuning's 2 * 8 + 2).
  (void)load_model(dir.file("b.safetensors"), &got, {}, scaling("yarn", 4.0, 0));
  EXPECT_EQ(got.model.rope_scaling, scaling("yarn", 4.0, symbols::tokens(4)));
  // Fine-tuning again without a scaling keeps the checkpoint's.
  RunOverrides keep;
  keep.values = run;
  Trainer again = Trainer::from_checkpoint(dir.file("b.safetensors"), keep);
  EXPECT_EQ(again.config().model.rope_scaling, want);
}

}  // namespace
}  // namespace posemb::lab
