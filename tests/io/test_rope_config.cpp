// Reading config.json (posemb/rope_config.hpp): configurations shaped like Llama 2, Llama 3.1 8B,
// Qwen2.5 with YaRN x4, a YaRN x8 one, Phi-3-mini-128k (longrope), Pythia (GPT-NeoX's rotary_pct
// and rotary_emb_base), Phi-2 (partial_rotary_factor), Mistral-Nemo (an explicit head_dim) and
// transformers 5's rope_parameters: the frequencies they give against references from the
// published formulas (tests/support/rope_scaling_reference.hpp), relative error <= 1e-12 (the
// issue's floor: 1e-6); every bad config refused in one line naming the file and the key;
// unused keys as warnings; a new rope_scaling block with every other key kept.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/rope_config.hpp"
#include "rope_scaling_reference.hpp"
#include "temp_dir.hpp"

namespace posemb {
namespace {

constexpr double kRelTol = 1e-12;  // see tests/core/test_rope_scaling.cpp

void expect_inv(const Rope& rope, const std::vector<double>& want, const std::string& what) {
  const auto& got = rope.frequencies().inv_freq;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(std::abs(static_cast<double>(got[i]) - want[i]), kRelTol * want[i])
        << what << " pair " << i;
  }
}

std::string list(std::size_t n, double a, double b) {
  std::string s = "[";
  for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(a + b * i);
  return s + "]";
}

const std::string kLlama2 = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
  "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": null, "vocab_size": 32000})";

const std::string kLlama31 = R"({"hidden_size": 4096, "num_attention_heads": 32,
  "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0,
  "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
  "rope_type": "llama3"}})";

TEST(RopeConfig, Llama2) {
  const RopeConfig c = parse_rope_config(kLlama2, "llama2.json");
  EXPECT_EQ(c.head_dim, 128u);
  EXPECT_EQ(c.rotary_dim, 128u);
  EXPECT_EQ(c.base, 10000.0);
  EXPECT_EQ(rope_scaling_type(c.scaling), RopeScalingType::none);
  EXPECT_EQ(c.trained_length(), 4096u);
  EXPECT_EQ(c.extended_length(), 4096u);
  EXPECT_TRUE(c.warnings.empty());
  expect_inv(c.rope(RopeLayout::half), reference::rope_plain(10000, 128), "llama 2");
}

TEST(RopeConfig, Llama31) {
  const RopeConfig c = parse_rope_config(kLlama31, "llama3.1.json");
  EXPECT_EQ(rope_scaling_type(c.scaling), RopeScalingType::llama3);
  EXPECT_EQ(c.trained_length(), 8192u);
  EXPECT_EQ(c.extended_length(), 131072u);
  EXPECT_EQ(c.scaled_length(), 65536u);  // 8 x 8192: Llama 3.1 states 131072 itself
  const Rope rope = c.rope(RopeLayout::half);
  expect_inv(rope, reference::rope_llama3(500000, 128, 8, 1, 4, 8192), "llama 3.1 8B");
  EXPECT_EQ(rope.attention_factor(), 1.0);
}

TEST(RopeConfig, YarnX4AndX8) {
  // Qwen2.5-7B-Instruct as its model card extends it: the older "type" key.
  const RopeConfig q = parse_rope_config(
      R"({"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
          "rope_theta": 1000000.0, "rope_scaling": {"factor": 4.0,
          "original_max_position_embeddings": 32768, "type": "yarn"}})",
      "qwen.json");
  const auto r4 = reference::rope_yarn(1e6, 128, 4, 32768);
  expect_inv(q.rope(RopeLayout::half), r4.inv, "yarn x4");
  EXPECT_NEAR(q.rope(RopeLayout::half).attention_factor(), r4.mscale, kRelTol);
  EXPECT_EQ(q.extended_length(), 131072u);
  // x8 without the original length in the block: max_position_embeddings is the trained one.
  const RopeConfig y = parse_rope_config(
      R"({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
          "rope_theta": 10000, "rope_scaling": {"rope_type": "yarn", "factor": 8,
          "beta_fast": null, "beta_slow": 0}})",
      "yarn8.json");
  const auto r8 = reference::rope_yarn(10000, 128, 8, 4096);
  expect_inv(y.rope(RopeLayout::half), r8.inv, "yarn x8");
  EXPECT_NEAR(y.rope(RopeLayout::half).attention_factor(), r8.mscale, kRelTol);
  EXPECT_EQ(y.extended_length(), 32768u);
}

std::string phi3(std::size_t short_n = 48, std::size_t long_n = 48) {
  return R"({"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096, "rope_theta": 10000.0, "partial_rotary_factor": 1.0,
    "rope_scaling": {"type": "longrope", "short_factor": )" +
         list(short_n, 1.0, 0.01) + R"(, "long_factor": )" + list(long_n, 1.0, 1.5) + "}}";
}

TEST(RopeConfig, Phi3LongRopeShortBelowLongAbove) {
  const RopeConfig c = parse_rope_config(phi3(), "phi3.json");
  EXPECT_EQ(c.head_dim, 96u);
  EXPECT_EQ(c.trained_length(), 4096u);
  EXPECT_EQ(c.extended_length(), 131072u);
  std::vector<double> shorts, longs;
  for (std::size_t i = 0; i < 48; ++i) {
    shorts.push_back(std::stod(std::to_string(1.0 + 0.01 * i)));
    longs.push_back(std::stod(std::to_string(1.0 + 1.5 * i)));
  }
  const double af = reference::longrope_attention(32.0, 4096);
  for (const std::size_t n : {0u, 4096u}) {
    const Rope r = c.rope(RopeLayout::half, n);
    expect_inv(r, reference::rope_longrope(10000, 96, shorts), "short at " + std::to_string(n));
    EXPECT_NEAR(r.attention_factor(), af, kRelTol);
  }
  for (const std::size_t n : {4097u, 131072u}) {
    const Rope r = c.rope(RopeLayout::half, n);
    expect_inv(r, reference::rope_longrope(10000, 96, longs), "long at " + std::to_string(n));
    EXPECT_NEAR(r.attention_factor(), af, kRelTol);
  }
}

TEST(RopeConfig, PartialRotationAndExplicitHeadDim) {
  // Pythia (GPT-NeoX): rotary_pct and rotary_emb_base.
  const RopeConfig p = parse_rope_config(
      R"({"hidden_size": 2048, "num_attention_heads": 16, "rotary_pct": 0.25,
          "rotary_emb_base": 10000, "max_position_embeddings": 2048})",
      "pythia.json");
  EXPECT_EQ(p.head_dim, 128u);
  EXPECT_EQ(p.rotary_dim, 32u);
  expect_inv(p.rope(RopeLayout::half), reference::rope_plain(10000, 32), "gpt-neox 0.25");
  // Phi-2: int(80 * 0.4) = 32.
  const RopeConfig phi2 = parse_rope_config(
      R"({"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4,
          "rope_theta": 10000.0, "max_position_embeddings": 2048})",
      "phi2.json");
  EXPECT_EQ(phi2.rotary_dim, 32u);
  // Mistral-Nemo: head_dim 128, not 5120 / 32 = 160.
  const RopeConfig nemo = parse_rope_config(
      R"({"hidden_size": 5120, "num_attention_heads": 32, "head_dim": 128,
          "rope_theta": 1000000.0, "max_position_embeddings": 1024000})",
      "nemo.json");
  EXPECT_EQ(nemo.head_dim, 128u);
  expect_inv(nemo.rope(RopeLayout::half), reference::rope_plain(1e6, 128), "head_dim 128");
  // head_dim null: from hidden_size / num_attention_heads (transformers' `or`).
  EXPECT_EQ(parse_rope_config(R"({"hidden_size": 64, "num_attention_heads": 4, "head_dim": null,
                                  "rope_theta": 10000, "max_position_embeddings": 8})",
                              "x.json")
                .head_dim,
            16u);
}

TEST(RopeConfig, LinearDynamicAndTransformers5) {
  const RopeConfig d = parse_rope_config(
      R"({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
          "rope_theta": 10000, "rope_scaling": {"type": "dynamic", "factor": 2.0}})",
      "dyn.json");
  expect_inv(d.rope(RopeLayout::half), reference::rope_plain(10000, 128), "dynamic at L0");
  expect_inv(
      d.rope(RopeLayout::half, 16384),
      reference::rope_plain(reference::rope_ntk_base(10000, 128, 2.0 * 16384 / 4096 - 1), 128),
      "dynamic at 16384");
  const RopeConfig v5 = parse_rope_config(
      R"({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
          "rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000.0}})",
      "v5.json");
  EXPECT_EQ(v5.base, 500000.0);
  EXPECT_EQ(v5.extended_length(), 16384u);
  std::vector<double> want = reference::rope_plain(500000, 128);
  for (double& v : want) v /= 4;
  expect_inv(v5.rope(RopeLayout::half), want, "rope_parameters linear x4");
  EXPECT_TRUE(v5.warnings.empty());
}

// The config with one key's value replaced (or the key added), as text.
std::string with(const std::string& base, const std::string& key, const std::string& value) {
  auto j = nlohmann::ordered_json::parse(base);
  if (value == "<absent>") {
    j.erase(key);
  } else {
    j[key] = nlohmann::ordered_json::parse(value);
  }
  return j.dump();
}

void expect_refused(const std::string& text, const std::string& key, const std::string& what) {
  try {
    (void)parse_rope_config(text, "dir/config.json");
    ADD_FAILURE() << what << ": accepted";
  } catch (const FileFormatError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.path(), "dir/config.json") << what;
    EXPECT_EQ(m, "'dir/config.json': " + e.problem()) << what;
    EXPECT_NE(m.find("'dir/config.json'"), std::string::npos) << what << ": " << m;
    EXPECT_NE(m.find(key), std::string::npos) << what << ": " << key << " not in " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << what << ": " << m;
  }
}

TEST(RopeConfig, BadConfigsNameTheFileAndTheKey) {
  expect_refused(with(kLlama2, "rope_theta", R"("10000")"), "rope_theta", "base as a string");
  expect_refused(with(kLlama2, "rope_theta", "-1"), "rope_theta", "negative base");
  expect_refused(with(kLlama2, "max_position_embeddings", "<absent>"), "max_position_embeddings",
                 "no length");
  expect_refused(with(kLlama2, "max_position_embeddings", "-5"), "max_position_embeddings",
                 "negative length");
  expect_refused(with(kLlama2, "max_position_embeddings", "4096.5"), "max_position_embeddings",
                 "fractional length");
  expect_refused(with(kLlama2, "hidden_size", "<absent>"), "hidden_size", "no head size");
  expect_refused(with(kLlama2, "num_attention_heads", "30"), "hidden_size", "4096 / 30");
  expect_refused(with(kLlama2, "head_dim", "7"), "head_dim", "odd head_dim");
  // Heads wider than kMaxRopeHeadDim: refused before any frequency is computed.
  expect_refused(with(kLlama2, "head_dim", "131072"), "head_dim", "head_dim 2^17");
  expect_refused(with(with(kLlama2, "hidden_size", "4294967296"), "num_attention_heads", "1"),
                 "hidden_size", "a head of 2^32 columns");
  expect_refused(with(kLlama2, "partial_rotary_factor", "0"), "partial_rotary_factor", "0");
  expect_refused(with(with(kLlama2, "partial_rotary_factor", "0.5"), "rotary_pct", "0.25"),
                 "rotary_pct", "two rotary fractions");
  expect_refused(with(kLlama2, "rotary_emb_base", "20000"), "rotary_emb_base", "two bases");
  expect_refused(with(kLlama2, "partial_rotary_factor", "0.001"), "partial_rotary_factor",
                 "rotates 0 columns");
  expect_refused(with(kLlama2, "rope_scaling", R"("linear")"), "rope_scaling", "not an object");
  expect_refused(with(kLlama2, "rope_scaling", R"({"factor": 2})"), "rope_scaling.rope_type",
                 "no type");
  expect_refused(with(kLlama2, "rope_scaling", R"({"rope_type": "xpos", "factor": 2})"),
                 "rope_scaling.rope_type", "unknown type");
  expect_refused(with(kLlama2, "rope_scaling", R"({"type": 3})"), "rope_scaling.type",
                 "type as a number");
  expect_refused(with(kLlama2, "rope_scaling", R"({"rope_type": "linear"})"), "rope_scaling.factor",
                 "no factor");
  expect_refused(with(kLlama2, "rope_scaling", R"({"rope_type": "linear", "factor": "4"})"),
                 "rope_scaling.factor", "factor as a string");
  expect_refused(with(kLlama2, "rope_scaling", R"({"rope_type": "linear", "factor": 0.5})"),
                 "rope_scaling.factor", "factor below 1");
  expect_refused(with(kLlama2, "rope_scaling",
                      R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                          "high_freq_factor": 4})"),
                 "rope_scaling.original_max_position_embeddings", "llama3 without L0");
  expect_refused(
      with(kLlama2, "rope_scaling", R"({"rope_type": "yarn", "factor": 4, "truncate": "yes"})"),
      "rope_scaling.truncate", "truncate as a string");
  expect_refused(phi3(47, 48), "rope_scaling.short_factor", "47 short factors for 48 pairs");
  expect_refused(phi3(48, 64), "rope_scaling.long_factor", "64 long factors for 48 pairs");
  expect_refused(with(phi3(), "original_max_position_embeddings", "<absent>"),
                 "rope_scaling.factor", "longrope without a length or a factor");
  expect_refused(R"({"rope_theta": 1, "rope_theta": 2})", "rope_theta", "a key twice");
  expect_refused("[1, 2]", "object", "not an object");
  expect_refused("{\"rope_theta\": ", "JSON", "cut short");
  expect_refused(std::string("{\"a\": 1}\0{", 10), "NUL", "a NUL byte");
}

TEST(RopeConfig, MissingBaseIsTransformersDefaultAloud) {
  // Llama-2-7b-hf's own config.json (transformers 4.31) has no rope_theta.
  const RopeConfig c = parse_rope_config(with(kLlama2, "rope_theta", "<absent>"), "c.json");
  EXPECT_EQ(c.base, 10000.0);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("rope_theta is missing: 10000 is used"), std::string::npos);
}

TEST(RopeConfig, UnusedKeysAreWarnings) {
  const RopeConfig c = parse_rope_config(
      with(kLlama31, "rope_scaling",
           R"({"rope_type": "llama3", "type": "linear", "factor": 8, "low_freq_factor": 1,
               "high_freq_factor": 4, "original_max_position_embeddings": 8192, "beta_fast": 3,
               "fancy": true})"),
      "c.json");
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_NE(c.warnings[0].find("rope_type 'llama3' is used"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[1].find("rope_scaling.'beta_fast' is not used by 'llama3'"),
            std::string::npos)
      << c.warnings[1];
  EXPECT_NE(c.warnings[2].find("'fancy'"), std::string::npos) << c.warnings[2];
  for (const auto& w : c.warnings) EXPECT_EQ(w.rfind("'c.json': ", 0), 0u) << w;
  // Phi-3's early name for longrope.
  std::string su = phi3();
  su.replace(su.find("longrope"), 8, "su");
  const RopeConfig s = parse_rope_config(su, "su.json");
  EXPECT_EQ(rope_scaling_type(s.scaling), RopeScalingType::longrope);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("'su' is read as 'longrope'"), std::string::npos);
}

TEST(RopeConfig, ReadsAFile) {
  test::TempDir dir;
  std::ofstream(dir.file("config.json")) << kLlama31;
  const RopeConfig c = read_rope_config(dir.file("config.json"));
  EXPECT_EQ(rope_scaling_type(c.scaling), RopeScalingType::llama3);
  EXPECT_THROW(read_rope_config(dir.file("missing.json")), std::system_error);
  EXPECT_THROW(read_rope_config(dir.path().string()), FileFormatError);  // a directory
}

TEST(RopeConfig, SetRopeScalingKeepsEveryOtherKey) {
  test::TempDir dir;
  const std::string in = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
    "num_attention_heads": 32, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
    "rope_scaling": null, "rope_theta": 10000.0, "name": "caf\u00e9 \u2603", "nested": {"z": 1, "a": [1.5, 2]},
    "torch_dtype": "float16"})";
  std::ofstream(dir.file("config.json")) << in;
  RopeScalingEdit e;
  e.type = RopeScalingType::yarn;
  e.factor = 4;
  const EditedRopeConfig out = set_rope_scaling(dir.file("config.json"), e);
  EXPECT_EQ(out.config.extended_length(), 16384u);
  EXPECT_EQ(out.config.trained_length(), 4096u);
  const auto before = nlohmann::ordered_json::parse(in);
  const auto after = nlohmann::ordered_json::parse(out.text);
  std::vector<std::string> keys_before, keys_after;
  for (const auto& [k, v] : before.items()) keys_before.push_back(k);
  for (const auto& [k, v] : after.items()) keys_after.push_back(k);
  EXPECT_EQ(keys_before, keys_after);  // same keys, same order
  for (const auto& [k, v] : before.items()) {
    if (k != "rope_scaling") {
      EXPECT_EQ(after[k], v) << k;
    }
  }
  EXPECT_EQ(
      after["rope_scaling"],
      nlohmann::ordered_json::parse(
          R"({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096})"));
  // llama3 with its defaults; then back to none.
  e = RopeScalingEdit{};
  e.type = RopeScalingType::llama3;
  e.factor = 8;
  e.original_max_position_embeddings = 2048;
  const auto l3 = nlohmann::ordered_json::parse(set_rope_scaling(dir.file("config.json"), e).text);
  EXPECT_EQ(l3["rope_scaling"]["low_freq_factor"], 1.0);
  EXPECT_EQ(l3["rope_scaling"]["high_freq_factor"], 4.0);
  EXPECT_EQ(l3["rope_scaling"]["original_max_position_embeddings"], 2048);
  std::ofstream(dir.file("l3.json")) << kLlama31;
  const auto none = set_rope_scaling(dir.file("l3.json"), RopeScalingEdit{});
  EXPECT_TRUE(nlohmann::ordered_json::parse(none.text)["rope_scaling"].is_null());
  EXPECT_EQ(none.config.extended_length(), 131072u);
  // An edit whose values make no valid scaling: std::invalid_argument naming the key (the file
  // was valid), not a FileFormatError blaming the file.
  e.low_freq_factor = 4;
  e.high_freq_factor = 1;
  try {
    (void)set_rope_scaling(dir.file("config.json"), e);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("rope_scaling.high_freq_factor"), std::string::npos)
        << err.what();
  }
}

// Only the block's value is rewritten: every other byte stays, numbers a parser would round
// included.
TEST(RopeConfig, SetRopeScalingRewritesOnlyTheBlock) {
  test::TempDir dir;
  const std::string head = R"({"hidden_size":4096, "num_attention_heads": 32,
  "max_position_embeddings": 4096, "initializer_range": 1e-400,
  "vocab": 123456789012345678901234567890,
  "rope_scaling": )";
  const std::string tail = R"(, "rope_theta": 1.0e4}
)";
  std::ofstream(dir.file("config.json")) << head << "null" << tail;
  RopeScalingEdit e;
  e.type = RopeScalingType::linear;
  e.factor = 2;
  const EditedRopeConfig out = set_rope_scaling(dir.file("config.json"), e);
  EXPECT_EQ(out.text, head + "{\n    \"rope_type\": \"linear\",\n    \"factor\": 2.0\n  }" + tail);
  EXPECT_EQ(out.keys, std::vector<std::string>{"rope_scaling"});
}

// transformers 4 reads rope_scaling, 5 rope_scaling first and then rope_parameters: a config with
// both gets the edit in both (rope_parameters keeping its rope_theta), and one whose two blocks
// disagree is refused, naming both.
TEST(RopeConfig, SetRopeScalingWritesBothBlocksOrRefusesDisagreeingOnes) {
  test::TempDir dir;
  const std::string base = R"({"hidden_size": 4096, "num_attention_heads": 32,
    "max_position_embeddings": 4096, "rope_theta": 500000.0, )";
  std::ofstream(dir.file("both.json"))
      << base << R"("rope_scaling": {"type": "linear", "factor": 2.0},
    "rope_parameters": {"rope_type": "linear", "factor": 2, "rope_theta": 500000.0}})";
  RopeScalingEdit e;
  e.type = RopeScalingType::yarn;
  e.factor = 4;
  const EditedRopeConfig out = set_rope_scaling(dir.file("both.json"), e);
  EXPECT_EQ(out.keys, (std::vector<std::string>{"rope_scaling", "rope_parameters"}));
  const auto j = nlohmann::ordered_json::parse(out.text);
  EXPECT_EQ(j["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(j["rope_parameters"]["rope_type"], "yarn");
  EXPECT_EQ(j["rope_parameters"]["factor"], 4.0);
  EXPECT_EQ(j["rope_parameters"]["rope_theta"], 500000.0);
  EXPECT_FALSE(j["rope_scaling"].contains("rope_theta"));
  EXPECT_TRUE(read_rope_config(dir.file("both.json")).warnings.empty());

  std::ofstream(dir.file("split.json"))
      << base << R"("rope_scaling": {"rope_type": "linear", "factor": 2.0},
    "rope_parameters": {"rope_type": "yarn", "factor": 8.0, "rope_theta": 10000.0}})";
  const RopeConfig read = read_rope_config(dir.file("split.json"));
  EXPECT_EQ(rope_scaling_type(read.scaling), RopeScalingType::linear);  // as transformers reads it
  ASSERT_EQ(read.warnings.size(), 1u);
  EXPECT_NE(read.warnings[0].find("disagree"), std::string::npos) << read.warnings[0];
  try {
    (void)set_rope_scaling(dir.file("split.json"), e);
    ADD_FAILURE() << "no throw";
  } catch (const FileFormatError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("rope_scaling"), std::string::npos) << what;
    EXPECT_NE(what.find("rope_parameters"), std::string::npos) << what;
    EXPECT_NE(what.find("disagree"), std::string::npos) << what;
  }
}

TEST(RopeConfig, EditsTakeOnlyTheirTypesParameters) {
  RopeScalingEdit e;
  e.type = RopeScalingType::llama3;
  e.factor = 8;
  e.beta_fast = 16;
  EXPECT_THROW(validate_rope_scaling_edit(e), std::invalid_argument);
  e.beta_fast.reset();
  EXPECT_NO_THROW(validate_rope_scaling_edit(e));
  e.factor = 0.5;
  EXPECT_THROW(validate_rope_scaling_edit(e), std::invalid_argument);
  e = RopeScalingEdit{};
  e.type = RopeScalingType::linear;
  e.factor = 2;
  e.original_max_position_embeddings = 4096;
  EXPECT_THROW(validate_rope_scaling_edit(e), std::invalid_argument);
  for (const auto t : {RopeScalingType::longrope, RopeScalingType::ntk}) {
    e = RopeScalingEdit{};
    e.type = t;
    e.factor = 2;
    EXPECT_THROW(validate_rope_scaling_edit(e), std::invalid_argument);
  }
}

// Phi-3 with L0 = 1: the attention factor sqrt(1 + ln s / ln L0) divided by ln 1 = 0 (inf).
TEST(RopeConfig, LongRopeWithATrainedLengthOf1IsRefused) {
  expect_refused(with(phi3(), "original_max_position_embeddings", "1"),
                 "original_max_position_embeddings", "longrope with L0 = 1");
}

// factor * L0 at or past 2^64 does not fit a std::size_t: the lengths saturate (they were 0,
// from an undefined conversion).
TEST(RopeConfig, LengthsPastSizeMaxSaturate) {
  RopeConfig c;
  c.head_dim = c.rotary_dim = 64;
  c.max_position_embeddings = 4096;
  c.scaling = LinearScaling{1e16};
  EXPECT_EQ(c.scaled_length(), SIZE_MAX);
  EXPECT_EQ(c.extended_length(), SIZE_MAX);
  c.scaling = YarnScaling{.factor = 4, .original_max_position_embeddings = std::size_t{1} << 62};
  EXPECT_EQ(c.scaled_length(), SIZE_MAX);  // exactly 2^64
  c.scaling = YarnScaling{.factor = 3, .original_max_position_embeddings = std::size_t{1} << 62};
  EXPECT_EQ(c.scaled_length(), 3 * (std::size_t{1} << 62));  // fits
  c.scaling = LinearScaling{4};
  EXPECT_EQ(c.scaled_length(), 16384u);
}

// posemb/rope_config.hpp's example, with -Wextra -Werror (missing-field-initializers: the
// edit's std::optional members had no default initializers).
TEST(RopeConfig, HeaderExampleOfAnEditCompilesWithEveryWarning) {
  posemb::RopeScalingEdit e{.type = posemb::RopeScalingType::yarn, .factor = 4};
  EXPECT_FALSE(e.original_max_position_embeddings.has_value());
  validate_rope_scaling_edit(e);
}

}  // namespace
}  // namespace posemb
