// Runtime SIMD dispatch (posemb/simd.hpp): every kernel gives the same bits on every target this
// CPU runs (baseline, SSE4, AVX2, AVX-512), each equal to its plain scalar reference; and
// POSEMB_SIMD picks the target.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "core/sincos_kernels.hpp"
#include "embed_reference.hpp"
#include "layer_fixtures.hpp"
#include "posemb/rope.hpp"
#include "posemb/simd.hpp"
#include "posemb/sinusoidal.hpp"
#include "rope_reference.hpp"
#include "sincos_reference.hpp"

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

int plus_one(int x) {
  return x + 1;
}

// A dispatch table without posemb's target (a client's kernel file compiled for fewer targets):
// POSEMB_DISPATCH throws instead of calling a null pointer.
TEST(SimdTargets, DispatchThroughATableWithoutTheTargetThrows) {
  using Fn = int (*)(int);
  const Fn table[3] = {&plus_one, nullptr, &plus_one};
  EXPECT_EQ(detail::checked_dispatch(table, 0)(41), 42);
  EXPECT_EQ(detail::checked_dispatch(table, 2)(1), 2);
  try {
    (void)detail::checked_dispatch(table, 1);
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no version for posemb's SIMD target"), std::string::npos)
        << e.what();
  }
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
// Odd widths (vector tails), one column, several vectors, V small (repeated rows) and large,
// rows narrower than the forward's prefetch distance in a table of more than 1 MiB, and more
// batch rows than the position-only backward sums at once (8).
constexpr Shape kShapes[] = {{1, 1, 1, 1, 1},       {2, 3, 5, 4, 3},     {3, 7, 17, 2, 9},
                             {4, 16, 33, 50, 20},   {5, 31, 129, 7, 40}, {8, 64, 200, 3000, 64},
                             {3, 50, 40, 8000, 50}, {19, 9, 37, 13, 12}};

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

// Large enough for several threads, streaming stores (>= 8 MiB of output) and the grouped reads
// of a table of 1 MiB or more, with output rows all aligned and with a misaligned row start.
TEST(SimdTargets, LargeStreamedForwardAndBackwardGiveTheSameBitsOnEveryTarget) {
  const std::size_t B = 2, T = 1024, C = 1031, V = 300, maxT = 1024;
  const auto batch = testing::make_batch(testing::SourceKind::left_padding, B, T, V, maxT, 5);
  const auto wte = random_matrix(V, C, 6), wpe = random_matrix(maxT, C, 7);
  const auto dout = random_matrix(B * T, C, 8);
  expect_same_on_every_target("large", [&] {
    Matrix<float> store(B * T, C + 9), dwte(V, C), dwpe(maxT, C);
    MatrixView<float> aligned(store.data(), B * T, C, C + 9);  // 1040 floats: 64-byte rows
    MatrixView<float> out(store.data() + 1, B * T, C, C + 8);
    embed_forward(aligned, batch.tokens, batch.source(), wte, wpe);
    Bytes all = bytes_of(MatrixView<const float>(aligned));
    embed_forward(out, batch.tokens, batch.source(), wte, wpe);
    embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, batch.source());
    for (const Bytes& b : {bytes_of(MatrixView<const float>(out)), bytes_of(dwte), bytes_of(dwpe)})
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

// ---- The encodings: sine-cosine kernel, sinusoidal, rotary; against sincos_reference.hpp ----

template <class T>
Bytes bytes_of_vector(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  return Bytes(p, p + v.size() * sizeof(T));
}

TEST(SimdTargets, SinCosKernelEqualsTheScalarReferenceOnEveryTarget) {
  // Every scale, near multiples of pi/2, 2^24 and past it, non-finite; every count 0..40 (tails).
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> xs;
  for (int e = -20; e < 26; ++e) {
    for (int k = 0; k < 300; ++k) xs.push_back(std::ldexp(1.0 + unit(rng), e));
  }
  for (int k = 1; k < 3000; ++k) xs.push_back(k * 1.5707963267948966);
  for (const double x :
       {0.0, -0.0, -1.0, -1e6, 16777216.0, std::nextafter(16777216.0, 0.0),
        std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    xs.push_back(x);
  }
  std::vector<double> want_s(xs.size()), want_c(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) reference::sin_cos(xs[i], want_s[i], want_c[i]);
  for (const std::string& target : simd_targets()) {
    detail::set_simd_target(target);
    for (std::size_t n = 0; n <= 40; ++n) {  // a prefix of n: all tail lengths
      std::vector<double> s(n, -7.0), c(n, -7.0);
      detail::sin_cos_values()(xs.data() + 1, n, s.data(), c.data());
      EXPECT_EQ(bytes_of_vector(s),
                bytes_of_vector(std::vector<double>(want_s.begin() + 1, want_s.begin() + 1 + n)))
          << n << " on " << target;
      EXPECT_EQ(bytes_of_vector(c),
                bytes_of_vector(std::vector<double>(want_c.begin() + 1, want_c.begin() + 1 + n)))
          << n << " on " << target;
    }
    std::vector<double> s(xs.size()), c(xs.size());
    detail::sin_cos_values()(xs.data(), xs.size(), s.data(), c.data());
    EXPECT_EQ(bytes_of_vector(s), bytes_of_vector(want_s)) << "sin on " << target;
    EXPECT_EQ(bytes_of_vector(c), bytes_of_vector(want_c)) << "cos on " << target;
  }
  detail::set_simd_target("");
}

TEST(SimdTargets, SinusoidalEncodingEqualsTheScalarReferenceOnEveryTarget) {
  // Odd and even widths, every tail; positions from 0, and across 2^24 radians (the long double
  // path for the first frequencies); one table large enough for several threads.
  struct Case {
    std::size_t rows, dim, start;
  };
  const Case cases[] = {{5, 1, 0},        {9, 2, 0},     {7, 3, 3},   {6, 6, 100},
                        {5, 7, 0},        {4, 14, 31},   {4, 15, 0},  {3, 30, 2000},
                        {3, 66, 1},       {3, 130, 7},   {3, 131, 0}, {40, 16, 16777200},
                        {3, 9, 1u << 31}, {520, 1030, 0}};
  for (const Case& k : cases) {
    for (const auto layout : {SinusoidalLayout::interleaved, SinusoidalLayout::concatenated}) {
      for (const auto freq :
           {SinusoidalFrequencies::vaswani, SinusoidalFrequencies::tensor2tensor}) {
        const SinusoidalOptions o{.layout = layout, .frequencies = freq};
        Matrix<float> want_f(k.rows, k.dim);
        Matrix<double> want_d(k.rows, k.dim);
        reference::sinusoidal(want_f.view(), k.start, o);
        reference::sinusoidal(want_d.view(), k.start, o);
        const std::string what = std::to_string(k.rows) + "x" + std::to_string(k.dim) + "+" +
                                 std::to_string(k.start) + " layout " +
                                 std::to_string(int(layout)) + " freq " + std::to_string(int(freq));
        for (const std::string& target : simd_targets()) {
          detail::set_simd_target(target);
          EXPECT_EQ(bytes_of(sinusoidal_positional_encoding(k.rows, k.dim, k.start, o)),
                    bytes_of(want_f))
              << what << " on " << target;
          Matrix<double> d(k.rows, k.dim);
          sinusoidal_positional_encoding_into(d.view(), k.start, o);
          EXPECT_EQ(bytes_of(d), bytes_of(want_d)) << what << " (double) on " << target;
        }
      }
    }
  }
  detail::set_simd_target("");
}

TEST(SimdTargets, RopeAnglesCacheAndRotationEqualTheScalarReferenceOnEveryTarget) {
  struct Case {
    std::size_t H, D, R;  // R < D: unrotated tail columns
  };
  // pairs 1, 3, 7, 15, 33, 65 and partial rotations: every vector tail of every target; pairs
  // 4, 8, 16, 32, 64 (whole vectors, 1 to 8 of them, 4 or 8 lanes: the angles held in
  // registers for a row), 128 (too many to hold), and a partial rotation of 16 pairs.
  const Case cases[] = {{3, 2, 2},    {2, 6, 6},     {3, 14, 14},   {2, 30, 30},
                        {2, 66, 66},  {1, 130, 130}, {2, 14, 6},    {3, 66, 34},
                        {2, 130, 2},  {2, 8, 8},     {3, 16, 16},   {2, 32, 32},
                        {12, 64, 64}, {2, 128, 128}, {1, 256, 256}, {2, 64, 32}};
  std::uint64_t seed = 40;
  for (const Case& k : cases) {
    for (const auto layout : {RopeLayout::interleaved, RopeLayout::half}) {
      const Rope rope(k.D, layout, {.base = 10000.0, .rotary_dim = k.R});
      const reference::RopeGeometry g{k.H, k.D, k.R, layout};
      const std::string what = "H=" + std::to_string(k.H) + " D=" + std::to_string(k.D) +
                               " R=" + std::to_string(k.R) + " layout " +
                               std::to_string(int(layout));
      // Rope::angles at positions near 0, 2^24 and 2^31; the cache's rows are the same values.
      const std::size_t P = k.R / 2;
      std::vector<float> wc, ws;
      for (const std::size_t p :
           {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{16777215},
            std::size_t{16777217}, std::size_t{1} << 31}) {
        reference::rope_angles(p, g, wc, ws);
        expect_same_on_every_target(what + " angles", [&] {
          std::vector<float> c(P), s(P);
          rope.angles(p, c, s);
          EXPECT_EQ(bytes_of_vector(c), bytes_of_vector(wc)) << what << " cos at " << p;
          EXPECT_EQ(bytes_of_vector(s), bytes_of_vector(ws)) << what << " sin at " << p;
          return bytes_of_vector(c);
        });
      }
      const std::size_t maxT = 40;
      Matrix<float> want_cos(maxT, P), want_sin(maxT, P);
      for (std::size_t p = 0; p < maxT; ++p) {
        reference::rope_angles(p, g, wc, ws);
        for (std::size_t i = 0; i < P; ++i) want_cos(p, i) = wc[i], want_sin(p, i) = ws[i];
      }
      for (auto kind : testing::kAllSources) {
        const std::size_t B = 3, T = 13;
        const auto batch = testing::make_batch(kind, B, T, 9, maxT, ++seed);
        const auto src = batch.source();
        const auto pos = resolve_positions(src, B, T, maxT);
        const std::vector<std::int64_t> pv(pos.data(), pos.data() + pos.size());
        // x: a column block of a wider buffer (strided rows), as q in a fused qkv buffer.
        const std::size_t C = k.H * k.D;
        const Matrix<float> x0 = random_matrix(B * T, 2 * C + 1, ++seed);
        Matrix<float> want_f = x0, want_b = x0;
        reference::rope(MatrixView<float>(want_f.data() + 1, B * T, C, 2 * C + 1), pv, g, false);
        reference::rope(MatrixView<float>(want_b.data() + 1, B * T, C, 2 * C + 1), pv, g, true);
        for (const std::string& target : simd_targets()) {
          detail::set_simd_target(target);
          const RopeCache cache(rope, maxT);
          EXPECT_EQ(bytes_of(cache.cos()), bytes_of(want_cos)) << what << " on " << target;
          EXPECT_EQ(bytes_of(cache.sin()), bytes_of(want_sin)) << what << " on " << target;
          const std::string name = what + " " + testing::source_name(kind) + " on " + target;
          Matrix<float> f_direct = x0, f_cached = x0, b_direct = x0, b_cached = x0;
          auto q = [&](Matrix<float>& m) {
            return MatrixView<float>(m.data() + 1, B * T, C, 2 * C + 1);
          };
          rope_forward(q(f_direct), k.H, B, T, src, rope);
          rope_forward(q(f_cached), k.H, B, T, src, cache);
          rope_backward(q(b_direct), k.H, B, T, src, rope);
          rope_backward(q(b_cached), k.H, B, T, src, cache);
          EXPECT_EQ(bytes_of(f_direct), bytes_of(want_f)) << "forward direct " << name;
          EXPECT_EQ(bytes_of(f_cached), bytes_of(want_f)) << "forward cached " << name;
          EXPECT_EQ(bytes_of(b_direct), bytes_of(want_b)) << "backward direct " << name;
          EXPECT_EQ(bytes_of(b_cached), bytes_of(want_b)) << "backward cached " << name;
        }
      }
    }
  }
  detail::set_simd_target("");
}

// Large enough for several threads: B=2 T=600 H=4 D=130 (R=66, interleaved), direct and cached.
TEST(SimdTargets, LargeRopeGivesTheSameBitsOnEveryTarget) {
  const std::size_t B = 2, T = 600, H = 4, D = 130;
  const Rope rope(D, RopeLayout::interleaved, {.base = 500000.0, .rotary_dim = 66});
  const auto x0 = random_matrix(B * T, H * D, 11);
  const auto src = PositionSource::contiguous(5);
  expect_same_on_every_target("large rope", [&] {
    const RopeCache cache(rope, T + 5);
    Matrix<float> a = x0, b = x0;
    rope_forward(a.view(), H, B, T, src, rope);
    rope_backward(b.view(), H, B, T, src, cache);
    Bytes all = bytes_of(a);
    for (const Bytes& m : {bytes_of(b), bytes_of(cache.cos()), bytes_of(cache.sin())})
      all.insert(all.end(), m.begin(), m.end());
    return all;
  });
}

}  // namespace
}  // namespace posemb
