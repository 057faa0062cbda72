// Runtime SIMD dispatch (posemb/simd.hpp): every kernel gives the same bits on every target this
// CPU runs (baseline, SSE4, AVX2, AVX-512), each equal to its plain scalar reference; and
// POSEMB_SIMD picks the target.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "embed_reference.hpp"
#include "layer_fixtures.hpp"
#include "posemb/simd.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

using Bytes = std::vector<unsigned char>;

// Runs `run` on every target; each result must equal the baseline's.
void expect_same_on_every_target(const std::string& what, const std::function<Bytes()>& run) {
  const std::vector<std::string> targets = simd_targets();
  detail::set_simd_target("baseline");
  const Bytes baseline = run();
  for (const std::string& t : targets) {
    detail::set_simd_target(t);
    EXPECT_EQ(run(), baseline) << what << " on target " << t;
  }
  detail::set_simd_target("");
}

TEST(SimdTargets, ListsTheTargetsBestFirstWithTheBaselineLast) {
  const auto targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.back(), "baseline");
  for (const std::string& t : targets) {
    detail::set_simd_target(t);
    EXPECT_EQ(simd_target(), t);
  }
  detail::set_simd_target("");
  EXPECT_THROW(detail::set_simd_target("avx9000"), std::invalid_argument);
}

// The variable is read when the choice is (re)made; set_simd_target("") forgets the choice.
TEST(SimdTargets, PosembSimdPicksTheTargetAndABadValueThrowsBeforeAnythingIsWritten) {
  const char* saved = std::getenv("POSEMB_SIMD");
  const std::string saved_value = saved != nullptr ? saved : "";
  unsetenv("POSEMB_SIMD");
  detail::set_simd_target("");
  EXPECT_EQ(simd_target(), simd_targets().front());
  setenv("POSEMB_SIMD", "baseline", 1);
  detail::set_simd_target("");
  EXPECT_EQ(simd_target(), "baseline");
  setenv("POSEMB_SIMD", "best", 1);
  detail::set_simd_target("");
  EXPECT_EQ(simd_target(), simd_targets().front());

  setenv("POSEMB_SIMD", "avx9000", 1);
  detail::set_simd_target("");
  try {
    (void)simd_target();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("POSEMB_SIMD=avx9000"), std::string::npos) << m;
    EXPECT_NE(m.find("baseline"), std::string::npos) << m;
  }
  const auto batch = testing::make_batch(testing::SourceKind::contiguous, 2, 3, 5, 4, 1);
  const auto wte = random_matrix(5, 7, 2), wpe = random_matrix(4, 7, 3);
  Matrix<float> out = random_matrix(6, 7, 4);
  const Bytes before = bytes_of(out);
  EXPECT_THROW(embed_forward(out.view(), batch.tokens, batch.source(), wte, wpe),
               std::invalid_argument);
  EXPECT_EQ(bytes_of(out), before);

  if (saved != nullptr) {
    setenv("POSEMB_SIMD", saved_value.c_str(), 1);
  } else {
    unsetenv("POSEMB_SIMD");
  }
  detail::set_simd_target("");
}

struct Shape {
  std::size_t B, T, C, V, maxT;
};
// Odd widths (vector tails), one column, several vectors, V small (repeated rows) and large.
constexpr Shape kShapes[] = {{1, 1, 1, 1, 1},     {2, 3, 5, 4, 3},     {3, 7, 17, 2, 9},
                             {4, 16, 33, 50, 20}, {5, 31, 129, 7, 40}, {8, 64, 200, 3000, 64}};

template <class H>
Matrix<H> narrow(const Matrix<float>& m) {
  Matrix<H> out(m.rows(), m.cols());
  for (std::size_t i = 0; i < m.size(); ++i) out.data()[i] = H(m.data()[i]);
  return out;
}

TEST(SimdTargets, EmbeddingKernelsGiveTheSameBitsOnEveryTarget) {
  std::uint64_t seed = 10;
  for (const Shape& s : kShapes) {
    for (auto kind : testing::kAllSources) {
      const auto batch = testing::make_batch(kind, s.B, s.T, s.V, s.maxT, ++seed);
      const auto src = batch.source();
      const auto wte = random_matrix(s.V, s.C, ++seed), wpe = random_matrix(s.maxT, s.C, ++seed);
      const auto wte_bf = narrow<bfloat16>(wte), wpe_bf = narrow<bfloat16>(wpe);
      const auto wte_h = narrow<float16>(wte), wpe_h = narrow<float16>(wpe);
      const auto dout = random_matrix(s.B * s.T, s.C, ++seed);
      const auto x0 = random_matrix(s.B * s.T, s.C, ++seed);
      const auto g0 = random_matrix(s.V, s.C, ++seed), gp0 = random_matrix(s.maxT, s.C, ++seed);
      expect_same_on_every_target(testing::source_name(kind), [&] {
        Matrix<float> out(s.B * s.T, s.C), o_bf(s.B * s.T, s.C), o_h(s.B * s.T, s.C);
        Matrix<float> x = x0, dwte = g0, dwpe = gp0, dpos = gp0;
        embed_forward(out.view(), batch.tokens, src, wte, wpe);
        embed_forward(o_bf.view(), batch.tokens, src, wte_bf, wpe_bf);
        embed_forward(o_h.view(), batch.tokens, src, wte_h, wpe_h);
        add_positions_forward(x.view(), s.B, s.T, src, wpe_bf);
        embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, src);
        add_positions_backward(dpos.view(), dout, s.B, s.T, src);
        Bytes all;
        for (const auto& m : {&out, &o_bf, &o_h, &x, &dwte, &dwpe, &dpos}) {
          const Bytes b = bytes_of(*m);
          all.insert(all.end(), b.begin(), b.end());
        }
        return all;
      });
    }
  }
}

// Large enough for several threads and streaming stores (>= 8 MiB of output), with a misaligned
// output row start.
TEST(SimdTargets, LargeStreamedForwardAndBackwardGiveTheSameBitsOnEveryTarget) {
  const std::size_t B = 2, T = 1024, C = 1031, V = 97, maxT = 1024;
  const auto batch = testing::make_batch(testing::SourceKind::left_padding, B, T, V, maxT, 5);
  const auto wte = random_matrix(V, C, 6), wpe = random_matrix(maxT, C, 7);
  const auto dout = random_matrix(B * T, C, 8);
  expect_same_on_every_target("large", [&] {
    Matrix<float> store(B * T, C + 8), dwte(V, C), dwpe(maxT, C);
    MatrixView<float> out(store.data() + 1, B * T, C, C + 8);
    embed_forward(out, batch.tokens, batch.source(), wte, wpe);
    embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, batch.source());
    Bytes all = bytes_of(MatrixView<const float>(out));
    for (const Bytes& b : {bytes_of(dwte), bytes_of(dwpe)})
      all.insert(all.end(), b.begin(), b.end());
    return all;
  });
}

// ---- Optimizers: against the scalar formulas of optimizers.hpp, bit for bit ----------------

POSEMB_REFERENCE_SCALAR void adamw_reference(float* w, const float* g, float* m, float* v,
                                             std::size_t n, const AdamWConfig& cfg,
                                             std::int64_t t) {
  const float decay = 1.0f - cfg.lr * cfg.weight_decay;
  const float step = static_cast<float>(cfg.lr / (1.0 - std::pow(double(cfg.beta1), double(t))));
  const float bc2 = static_cast<float>(std::sqrt(1.0 - std::pow(double(cfg.beta2), double(t))));
  for (std::size_t i = 0; i < n; ++i) {
    w[i] *= decay;
    m[i] = cfg.beta1 * m[i] + (1.0f - cfg.beta1) * g[i];
    v[i] = cfg.beta2 * v[i] + (1.0f - cfg.beta2) * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / bc2 + cfg.eps;
    w[i] -= step * (m[i] / denom);
  }
}

POSEMB_REFERENCE_SCALAR void sgd_reference(float* w, const float* g, float* b, std::size_t n,
                                           const SgdConfig& cfg) {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] + cfg.weight_decay * w[i];
    b[i] = cfg.momentum * b[i] + d;
    w[i] -= cfg.lr * b[i];
  }
}

TEST(SimdTargets, OptimizerUpdatesEqualTheScalarFormulasOnEveryTarget) {
  const AdamWConfig acfg{
      .lr = 3e-2f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.1f};
  const SgdConfig scfg{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f};
  // (7, 13): tails only; (300, 1037): several vectors, parallel, and a strided view.
  for (auto [R, C] : {std::pair<std::size_t, std::size_t>{7, 13}, {300, 1037}}) {
    const std::size_t stride = C + 3;
    const Matrix<float> p0 = random_matrix(R, stride, 1);
    const Matrix<float> grads = random_matrix(3 * R, C, 2, 2.0f);
    // The reference on contiguous copies.
    Matrix<float> wa(R, C), ws(R, C), m(R, C), v(R, C), buf(R, C);
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t c = 0; c < C; ++c) wa(r, c) = ws(r, c) = p0(r, c);
    }
    for (std::int64_t s = 0; s < 3; ++s) {
      const float* g = grads.data() + static_cast<std::size_t>(s) * R * C;
      adamw_reference(wa.data(), g, m.data(), v.data(), R * C, acfg, s + 1);
      sgd_reference(ws.data(), g, buf.data(), R * C, scfg);
    }
    for (const std::string& target : simd_targets()) {
      detail::set_simd_target(target);
      Matrix<float> pa = p0, ps = p0;
      MatrixView<float> va(pa.data(), R, C, stride), vs(ps.data(), R, C, stride);
      AdamW adam(acfg);
      Sgd sgd(scfg);
      for (std::size_t s = 0; s < 3; ++s) {
        const MatrixView<const float> g(grads.data() + s * R * C, R, C);
        const ParamRef pa_ref{va, g}, ps_ref{vs, g};
        adam.step({&pa_ref, 1});
        sgd.step({&ps_ref, 1});
      }
      EXPECT_EQ(bytes_of(MatrixView<const float>(va)), bytes_of(wa)) << "AdamW on " << target;
      EXPECT_EQ(bytes_of(adam.first_moments()[0]), bytes_of(m)) << "AdamW m on " << target;
      EXPECT_EQ(bytes_of(adam.second_moments()[0]), bytes_of(v)) << "AdamW v on " << target;
      EXPECT_EQ(bytes_of(MatrixView<const float>(vs)), bytes_of(ws)) << "Sgd on " << target;
      EXPECT_EQ(bytes_of(sgd.velocities()[0]), bytes_of(buf)) << "Sgd momentum on " << target;
    }
    detail::set_simd_target("");
  }
}

// ---- Initializers: against the formulas of posemb/random.hpp, bit for bit ------------------

TEST(SimdTargets, InitializerFillEqualsTheScalarFormulasOnEveryTarget) {
  const std::size_t R = 37, C = 131, stride = 140;
  const double glorot = std::sqrt(6.0 / double(R + C));
  const double scaled = 1.0 / std::sqrt(double(C));
  struct Case {
    Initializer init;
    std::function<double(std::uint64_t)> value;
  };
  const Case cases[] = {
      {{InitKind::normal, 0.02, 5}, [](std::uint64_t k) { return 0.02 * counter_normal(5, k); }},
      {{InitKind::scaled_normal, 0.0, 6},
       [&](std::uint64_t k) { return scaled * counter_normal(6, k); }},
      {{InitKind::glorot_uniform, 0.0, 7},
       [&](std::uint64_t k) { return glorot * (2.0 * counter_uniform01(7, 3, k) - 1.0); }},
      {{InitKind::zeros, 0.0, 8}, [](std::uint64_t) { return 0.0; }}};
  for (const Case& c : cases) {
    Matrix<float> want(R, C);
    for (std::size_t k = 0; k < R * C; ++k) want.data()[k] = static_cast<float>(c.value(k));
    for (const std::string& target : simd_targets()) {
      detail::set_simd_target(target);
      Matrix<float> store = random_matrix(R, stride, 9);
      const MatrixView<float> table(store.data(), R, C, stride);
      initialize_table(table, c.init);
      EXPECT_EQ(bytes_of(MatrixView<const float>(table)), bytes_of(want))
          << c.init.name() << " on " << target;
    }
  }
  detail::set_simd_target("");
}

}  // namespace
}  // namespace posemb
