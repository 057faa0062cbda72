// The lab model (lab/model/model.hpp) as a whole against PyTorch, for every positional encoding:
// the same weights and batch must give the same loss and every parameter gradient within
// derived tolerances. Data goes through raw files in a temporary directory; the oracle is
// tests/oracles/lab_model_oracle.py (float64), run with Debian's /usr/bin/python3. Then central
// finite differences of our own loss on a few parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/model/model.hpp"

namespace posemb::lab {
namespace {

namespace fs = std::filesystem;

struct Case {
  ModelConfig cfg;
  std::size_t B = 3, T = 7;
  Matrix<TokenId> tokens;
  Matrix<std::int64_t> positions;
  Matrix<std::int32_t> targets;
};

// A tiny model with weights far from the N(0, 0.02) start (so attention is not uniform and
// LayerNorm affine terms matter), and a batch with ignored targets. Positions: contiguous, or a
// sorted random sample with gaps (what learned-randomized trains on) to exercise explicit ids.
Case make_case(const std::string& pe, std::uint64_t seed) {
  Case c;
  c.cfg.vocab_size = 9;
  c.cfg.d_model = 16;
  c.cfg.n_heads = 2;
  c.cfg.n_layers = 2;
  c.cfg.d_ff = 24;
  c.cfg.pe = pe;
  c.cfg.max_seq_len = find_encoding(pe).has_table ? 40 : 0;
  // Relative-position buckets: 8 (4 exact, then log-spaced to 6), so that the 7 tokens reach
  // the exact and the log-spaced buckets and the last one.
  if (find_encoding(pe).has_relative_buckets()) c.cfg.relative_bias = {8, 6};
  c.cfg.init_std = 0.3;
  c.tokens = Matrix<TokenId>(c.B, c.T);
  c.positions = Matrix<std::int64_t>(c.B, c.T);
  c.targets = Matrix<std::int32_t>(c.B, c.T);
  std::mt19937_64 rng(seed);
  for (std::size_t b = 0; b < c.B; ++b) {
    std::int64_t p = static_cast<std::int64_t>(rng() % 3);
    for (std::size_t t = 0; t < c.T; ++t) {
      c.tokens(b, t) = static_cast<TokenId>(rng() % c.cfg.vocab_size);
      c.targets(b, t) = (t % 3 == 1) ? -1 : static_cast<std::int32_t>(rng() % c.cfg.vocab_size);
      c.positions(b, t) = pe == "learned" || pe == "none" ? static_cast<std::int64_t>(t) : p;
      p += 1 + static_cast<std::int64_t>(rng() % 4);
    }
  }
  return c;
}

void randomize(Model& m, std::uint64_t seed) {
  m.initialize(seed);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> n(0.0f, 0.3f);
  for (const auto& s : m.tensors()) {
    if (s.value.rows() != 1) continue;  // biases and LayerNorm affine terms
    for (float& v : s.value.row(0)) v += n(rng);
  }
}

template <class T>
void write_raw(const fs::path& f, const T* data, std::size_t n) {
  std::ofstream out(f, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  ASSERT_TRUE(out.good()) << f;
}

std::vector<double> read_f64(const fs::path& f, std::size_t n) {
  std::vector<double> v(n);
  std::ifstream in(f, std::ios::binary);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(double)));
  EXPECT_TRUE(in.good()) << "cannot read " << n << " doubles from " << f;
  return v;
}

// The largest position of the case (a computed encoding reserves up to it before the forward).
std::size_t top_position(const Case& c) {
  const auto flat = c.positions.flat();
  return static_cast<std::size_t>(*std::max_element(flat.begin(), flat.end()));
}

class LabModelVsTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(LabModelVsTorch, LossAndEveryGradientMatch) {
  const std::string pe = GetParam();
  Case c = make_case(pe, 11);
  Model model(c.cfg);
  randomize(model, 5);
  model.reserve_positions(top_position(c) + 1);
  Activations acts(c.cfg, c.B, c.T);
  const double loss = model.forward(acts, c.tokens, c.positions, c.targets);
  model.zero_grad();
  model.backward(acts);

  const fs::path dir =
      fs::temp_directory_path() / ("posemb_lab_torch_" + pe + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::int64_t> tok(c.B * c.T), pos(c.B * c.T), tgt(c.B * c.T);
  for (std::size_t i = 0; i < c.B * c.T; ++i) {
    tok[i] = c.tokens.data()[i];
    pos[i] = c.positions.data()[i];
    tgt[i] = c.targets.data()[i];
  }
  write_raw(dir / "tokens.i64", tok.data(), tok.size());
  write_raw(dir / "positions.i64", pos.data(), pos.size());
  write_raw(dir / "targets.i64", tgt.data(), tgt.size());
  const auto slots = model.tensors();
  for (const auto& s : slots) {
    write_raw(dir / ("param." + s.name + ".f32"), s.value.data(), s.value.size());
  }
  {
    std::ofstream js(dir / "case.json");
    js << "{\"batch\": " << c.B << ", \"seq_len\": " << c.T
       << ", \"config\": {\"vocab_size\": " << c.cfg.vocab_size
       << ", \"d_model\": " << c.cfg.d_model << ", \"n_layers\": " << c.cfg.n_layers
       << ", \"n_heads\": " << c.cfg.n_heads << ", \"d_ff\": " << c.cfg.d_ff << ", \"pe\": \"" << pe
       << "\", \"max_seq_len\": " << c.cfg.max_seq_len
       << ", \"num_buckets\": " << c.cfg.relative_bias.num_buckets
       << ", \"max_distance\": " << c.cfg.relative_bias.max_distance << "}}\n";
  }
  const std::string cmd = std::string(POSEMB_ORACLE_PYTHON) + " " + POSEMB_TESTS_DIR +
                          "/oracles/lab_model_oracle.py " + dir.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  double ref_loss = 0;
  {
    std::ifstream in(dir / "loss.txt");
    in >> ref_loss;
    ASSERT_TRUE(in.good() || in.eof());
  }
  // Tolerances, from float32's epsilon. The loss is a mean of logsumexp terms after ~2 * 12
  // float32 operations along the deepest path, each with reductions of at most 24 terms: allow
  // 64 eps relative. Gradients pass the same chain twice (forward then backward, ~60 rounding
  // steps with sums of up to B*T = 21 rows): allow 256 eps of the tensor's largest gradient
  // element (elements that are themselves sums with cancellation carry error relative to the
  // size of their terms, not of their result).
  const double eps = std::numeric_limits<float>::epsilon();
  EXPECT_NEAR(loss, ref_loss, 64 * eps * std::max(std::fabs(ref_loss), 1.0));
  std::size_t checked = 0;
  for (const auto& s : slots) {
    const auto g = s.grad;
    const auto ref = read_f64(dir / ("grad." + s.name + ".f64"), g.size());
    double mag = 0;
    for (double r : ref) mag = std::max(mag, std::fabs(r));
    ASSERT_GT(mag, 0.0) << s.name << " has an all-zero reference gradient";
    const double tol = 256 * eps * mag;
    double worst = 0;
    for (std::size_t k = 0; k < g.size(); ++k) {
      worst = std::max(worst, std::fabs(g.data()[k] - ref[k]));
      ++checked;
    }
    EXPECT_LE(worst, tol) << s.name << ": largest |ours - torch| " << worst << " over " << g.size()
                          << " elements, magnitude " << mag;
  }
  EXPECT_EQ(checked, model.total_elements());
  fs::remove_all(dir);
}

// Central finite differences of our own float32 loss on the largest-gradient element of several
// tensors. Roundoff: each loss is within ~64 eps |L| of exact, so the quotient carries about
// 64 eps |L| / h; truncation is O(h^2 L''') which, with h = 1e-3 on weights of size ~0.3 (LayerNorm
// makes the loss curve on the scale of the embedding's spread), we bound by 3% of the gradient.
// Tolerance: 3% |g| + 64 eps |L| / h.
TEST_P(LabModelVsTorch, CentralFiniteDifferences) {
  const std::string pe = GetParam();
  Case c = make_case(pe, 23);
  Model model(c.cfg);
  randomize(model, 9);
  model.reserve_positions(top_position(c) + 1);
  Activations acts(c.cfg, c.B, c.T);
  const double loss = model.forward(acts, c.tokens, c.positions, c.targets);
  model.zero_grad();
  model.backward(acts);
  const auto slots = model.tensors();
  std::vector<std::string> names = {"wte.weight", "blocks.0.attn.qkv.weight",
                                    "blocks.1.mlp.fc.weight", "blocks.0.ln1.weight", "head.weight"};
  for (const auto& t : find_encoding(pe).tensor_shapes(c.cfg)) names.push_back(t.name);
  const double eps = std::numeric_limits<float>::epsilon();
  const float h = 1e-3f;
  for (const auto& name : names) {
    const auto& slot = *std::find_if(slots.begin(), slots.end(),
                                     [&](const TensorSlot& s) { return s.name == name; });
    auto g = slot.grad;
    std::size_t k = 0;
    for (std::size_t j = 1; j < g.size(); ++j) {
      if (std::fabs(g.data()[j]) > std::fabs(g.data()[k])) k = j;
    }
    const float analytic = g.data()[k];
    float* w = slot.value.data() + k;
    const float orig = *w;
    *w = orig + h;
    const double lp = model.forward(acts, c.tokens, c.positions, c.targets);
    *w = orig - h;
    const double lm = model.forward(acts, c.tokens, c.positions, c.targets);
    *w = orig;
    const double fd = (lp - lm) / (2.0 * static_cast<double>(h));
    const double tol = 0.03 * std::fabs(analytic) + 64 * eps * std::fabs(loss) / h;
    EXPECT_NEAR(fd, analytic, tol) << name << " element " << k;
    EXPECT_GT(std::fabs(analytic), 1e-3) << name << ": the element checked has a gradient";
  }
}

std::vector<std::string> every_encoding() {
  std::vector<std::string> names;
  for (const auto* e : encodings()) names.emplace_back(e->name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryEncoding, LabModelVsTorch, ::testing::ValuesIn(every_encoding()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace posemb::lab
