// The rotary embedding's numbers: both layouts against PyTorch (tests/oracles/torch_rope.py,
// written from HF's rotate_half and GPT-J's rotate_every_two, float64 autograd), the backward
// against central finite differences of a scalar loss, the backward as the forward's inverse,
// and the accuracy bound at large positions against a long double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "posemb/rope.hpp"
#include "rope_reference.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::random_matrix;
constexpr double kEps = std::numeric_limits<float>::epsilon();
// The documented bound: every rotated value within kBound * (|a| + |b|) of the exact rotation.
constexpr double kBound = 3e-7;

// |a| + |b| of the pair that column c of row n belongs to (c itself when it does not rotate).
double pair_magnitude(MatrixView<const float> x, std::size_t n, std::size_t c,
                      const reference::RopeGeometry& g) {
  const std::size_t h = c / g.head_dim, j = c % g.head_dim;
  if (j >= g.rotary_dim) return std::abs(x(n, c));
  const std::size_t half = g.rotary_dim / 2;
  const std::size_t i = g.layout == RopeLayout::interleaved ? j / 2 : j % half;
  return std::abs(x(n, reference::rope_first(g, h, i))) +
         std::abs(x(n, reference::rope_second(g, h, i)));
}

struct OracleCase {
  std::size_t N, H, D, R;
  RopeLayout layout;
  double base;
  std::int64_t max_position;
};

// Forward against torch's rotation and backward against torch's autograd, both in float64.
// The bound covers cos and sin rounded to float (2^-25 each, relative), the two products and the
// sum (3 * 2^-24 relative to |a| + |b|): under 2.2e-7 * (|a| + |b|), within kBound.
void check_against_torch(const OracleCase& k) {
  SCOPED_TRACE(std::string(k.layout == RopeLayout::half ? "half" : "interleaved") + " H=" +
               std::to_string(k.H) + " D=" + std::to_string(k.D) + " R=" + std::to_string(k.R));
  const std::size_t C = k.H * k.D;
  const Rope rope(k.D, k.layout, {.base = k.base, .rotary_dim = k.R});
  const Matrix<float> x0 = random_matrix(k.N, C, 21);
  const Matrix<float> w = random_matrix(k.N, C, 22);
  Matrix<std::int64_t> pos(1, k.N);
  for (std::size_t n = 0; n < k.N; ++n) {
    pos(0, n) =
        static_cast<std::int64_t>((n * 2654435761u) % static_cast<std::size_t>(k.max_position));
  }
  testing::TempDir dir;
  testing::write_raw(dir.file("x.f32"), x0);
  testing::write_raw(dir.file("w.f32"), w);
  testing::write_raw(dir.file("pos.i64"), pos);
  testing::run_oracle("torch_rope.py", dir.file("") + " " + std::to_string(k.N) + " " +
                                           std::to_string(k.H) + " " + std::to_string(k.D) + " " +
                                           std::to_string(rope.rotary_dim()) + " " +
                                           (k.layout == RopeLayout::half ? "half" : "interleaved") +
                                           " " + std::to_string(k.base));
  const auto ty = testing::read_raw<double>(dir.file("y.f64"), k.N, C);
  const auto tdx = testing::read_raw<double>(dir.file("dx.f64"), k.N, C);

  // The positions as one sequence of N tokens with explicit ids.
  const auto src = PositionSource::explicit_ids(pos);
  Matrix<float> y = x0;
  rope_forward(y.view(), k.H, 1, k.N, src, rope);
  Matrix<float> dx = w;
  rope_backward(dx.view(), k.H, 1, k.N, src, rope);
  const reference::RopeGeometry g{k.H, k.D, rope.rotary_dim(), k.layout, k.base};
  for (std::size_t n = 0; n < k.N; ++n) {
    for (std::size_t c = 0; c < C; ++c) {
      ASSERT_NEAR(y(n, c), ty(n, c), kBound * pair_magnitude(x0, n, c, g)) << n << ", " << c;
      ASSERT_NEAR(dx(n, c), tdx(n, c), kBound * pair_magnitude(w, n, c, g)) << n << ", " << c;
    }
  }
}

TEST(RopeTorch, HalfIsHuggingFaceRotateHalfAndInterleavedIsGptJRotateEveryTwo) {
  const OracleCase cases[] = {
      {40, 4, 16, 0, RopeLayout::half, 10000.0, 4096},         // HF Llama
      {40, 4, 16, 0, RopeLayout::interleaved, 10000.0, 4096},  // GPT-J, RoFormer
      {33, 3, 12, 4, RopeLayout::half, 10000.0, 2048},         // GPT-NeoX rotary_pct
      {33, 3, 12, 8, RopeLayout::interleaved, 10000.0, 2048},  // GPT-J rotary_dim
      {17, 1, 2, 0, RopeLayout::half, 500000.0, 100000},       // D = 2, Llama 3's base
      {17, 5, 2, 0, RopeLayout::interleaved, 10.0, 100},
  };
  for (const OracleCase& k : cases) check_against_torch(k);
}

// L(x) = sum_j w_j y_j(x) with y = rope_forward(x); its gradient is rope_backward(w). Central
// differences with step h: L is linear, so their only error is rounding. Moving x_k changes the
// two outputs of its pair; each is rounded within 1.5 eps (|a| + |b| + h), so the difference
// quotient is within 1.5 eps (|a| + |b| + h)(|w_a| + |w_b|) / h of the exact derivative of the
// float rotation, and the backward's own rounding adds 1.5 eps (|w_a| + |w_b|).
TEST(RopeBackward, MatchesCentralFiniteDifferences) {
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half}) {
    const std::size_t B = 2, T = 3, H = 3, D = 6, C = H * D;
    const Rope rope(D, layout, {.rotary_dim = 4});
    const auto src = PositionSource::contiguous(1000);
    const Matrix<float> x0 = random_matrix(B * T, C, 31);
    const Matrix<float> w = random_matrix(B * T, C, 32);
    const auto loss = [&](const Matrix<float>& x) {
      Matrix<float> y = x;
      rope_forward(y.view(), H, B, T, src, rope);
      double l = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) l += double(w.data()[i]) * y.data()[i];
      return l;
    };
    Matrix<float> grad = w;
    rope_backward(grad.view(), H, B, T, src, rope);
    const reference::RopeGeometry g{H, D, 4, layout};
    const float h = 0.25f;
    for (std::size_t n = 0; n < B * T; ++n) {
      for (std::size_t c = 0; c < C; ++c) {
        Matrix<float> xp = x0, xm = x0;
        xp(n, c) += h;
        xm(n, c) -= h;
        const double fd = (loss(xp) - loss(xm)) / (2.0 * h);
        const double wm = pair_magnitude(w, n, c, g), xm_ = pair_magnitude(x0, n, c, g);
        const double tol = 1.5 * kEps * (xm_ + h) * wm / h + 1.5 * kEps * wm + 1e-12;
        ASSERT_NEAR(grad(n, c), fd, tol)
            << (layout == RopeLayout::half ? "half " : "il ") << n << ", " << c;
      }
    }
  }
}

// The backward is the inverse rotation: backward(forward(x)) = x up to rounding. Each of the two
// rotations is within 1.5 eps (|a| + |b|) of exact, and cos^2 + sin^2 of the float values is
// within 2 eps of 1: in all within 5 eps (|a| + |b|).
TEST(RopeBackward, UndoesTheForward) {
  const std::size_t N = 50, H = 4, D = 10;
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half}) {
    const Rope rope(D, layout);
    const RopeCache cache(rope, 1u << 16);
    Matrix<std::int32_t> ids(1, N);
    for (std::size_t n = 0; n < N; ++n) ids(0, n) = static_cast<std::int32_t>(n * 1311);
    const auto src = PositionSource::explicit_ids(ids);
    const Matrix<float> x0 = random_matrix(N, H * D, 41);
    Matrix<float> x = x0;
    rope_forward(x.view(), H, 1, N, src, cache);
    rope_backward(x.view(), H, 1, N, src, cache);
    const reference::RopeGeometry g{H, D, D, layout};
    for (std::size_t n = 0; n < N; ++n) {
      for (std::size_t c = 0; c < H * D; ++c) {
        ASSERT_NEAR(x(n, c), x0(n, c), 5 * kEps * pair_magnitude(x0, n, c, g)) << n << ", " << c;
      }
    }
  }
}

// Against the rotation evaluated entirely in long double (theta, angle, cos, sin, products), at
// positions near 10^6, 10^9, 2^31 and 2^31 + 2^30 (tested bound: 2^31 + 2^30 + 15).
TEST(RopeAccuracy, WithinTheBoundAtLargePositions) {
  const std::size_t H = 2, D = 64, T = 16, C = H * D;
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half}) {
    const Rope rope(D, layout);
    const reference::RopeGeometry g{H, D, D, layout};
    for (std::size_t start : {std::size_t{999'992}, std::size_t{999'999'990},
                              std::size_t{2147483648u} - 8, std::size_t{3221225472u}}) {
      const Matrix<float> x0 = random_matrix(T, C, start);
      Matrix<float> x = x0;
      rope_forward(x.view(), H, 1, T, PositionSource::contiguous(start), rope);
      double worst = 0.0;
      for (std::size_t t = 0; t < T; ++t) {
        const long double p = static_cast<long double>(start + t);
        for (std::size_t h = 0; h < H; ++h) {
          for (std::size_t i = 0; i < D / 2; ++i) {
            const long double theta = std::pow(10000.0L, -static_cast<long double>(2 * i) / D);
            const long double cs = std::cos(p * theta), sn = std::sin(p * theta);
            const std::size_t ca = reference::rope_first(g, h, i);
            const std::size_t cb = reference::rope_second(g, h, i);
            const long double a = x0(t, ca), b = x0(t, cb);
            const double mag = static_cast<double>(std::fabs(a) + std::fabs(b));
            const double ea = static_cast<double>(std::fabs(x(t, ca) - (a * cs - b * sn)));
            const double eb = static_cast<double>(std::fabs(x(t, cb) - (a * sn + b * cs)));
            worst = std::max(worst, std::max(ea, eb) / mag);
          }
        }
      }
      EXPECT_LE(worst, kBound) << "start " << start;
    }
  }
}

// The long double reference is needed: with float32 angles the rotation at position ~10^9 is
// off by far more than the bound.
TEST(RopeAccuracy, Float32AnglesWouldFailTheBound) {
  const std::size_t p = 999'999'999;
  const float angle = static_cast<float>(p);  // pair 0: theta = 1
  const long double exact = std::cos(static_cast<long double>(p));
  EXPECT_GT(std::fabs(std::cos(angle) - exact), 1e-3);
  Matrix<float> x(1, 2);
  x(0, 0) = 1.0f;  // a = 1, b = 0: a' = cos(p)
  rope_forward(x.view(), 1, 1, 1, PositionSource::contiguous(p), Rope(2, RopeLayout::half));
  EXPECT_LE(std::fabs(x(0, 0) - exact), kBound);
}

}  // namespace
}  // namespace posemb
