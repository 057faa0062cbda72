// posemb's sine-cosine kernel (src/core/sincos_kernels.hpp) against std::sin and std::cos in
// long double, over many angles in [0, 2^24): random ones at every scale, those nearest to
// multiples of pi/2 (where the reduction cancels), small ones, and those next to 2^24; and the
// long double fallback from 2^24 on and for non-finite angles. Bit-for-bit equality with the
// scalar reference on every SIMD target is tested in tests/nn/test_simd_targets.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/sincos_kernels.hpp"
#include "posemb/simd.hpp"

namespace posemb {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();  // 2^-52

// The bound. The reduction r = x - n pi/2 is exact up to its last two roundings (each at most
// half an ulp of r: x - n * kPio2Hi is exact, and so is the next subtraction whenever r is small)
// plus n * |kPio2Lo| * 2^-53 < 2^-88 from the rounded product of the third piece; fdlibm's
// polynomials add under one ulp of the result. So the error is below 2 ulp of the result
// (2 * 2^-52 * |exact|) plus 2^-88 absolute; the test allows 2 * kEps * |exact| + 2^-85.
double bound(long double exact) {
  return 2.0 * kEps * static_cast<double>(std::fabs(exact)) + std::ldexp(1.0, -85);
}

struct Worst {
  double ratio = 0;  // the largest |error| / bound
  double x = 0;
};

void check(const std::vector<double>& xs, Worst& worst) {
  std::vector<double> s(xs.size()), c(xs.size());
  detail::sin_cos_values()(xs.data(), xs.size(), s.data(), c.data());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double x = xs[i];
    const long double es = std::sin(x), ec = std::cos(x);
    const double rs =
        static_cast<double>(std::fabs(static_cast<long double>(s[i]) - es)) / bound(es);
    const double rc =
        static_cast<double>(std::fabs(static_cast<long double>(c[i]) - ec)) / bound(ec);
    ASSERT_LE(rs, 1.0) << "sin(" << xs[i] << ") = " << s[i] << ", exact " << double(es);
    ASSERT_LE(rc, 1.0) << "cos(" << xs[i] << ") = " << c[i] << ", exact " << double(ec);
    if (std::max(rs, rc) > worst.ratio) worst = {std::max(rs, rc), xs[i]};
  }
}

TEST(SinCosKernel, WithinTwoUlpOfLongDoubleOverRandomAnglesAtEveryScale) {
  std::mt19937_64 rng(20261130);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> xs;
  for (int e = -30; e < 24; ++e) {  // [2^e, 2^(e+1)), 20000 each
    for (int k = 0; k < 20000; ++k) xs.push_back(std::ldexp(1.0 + unit(rng), e));
  }
  Worst worst;
  check(xs, worst);
  std::cout << "worst: " << worst.ratio << " of the bound, at x = " << worst.x << " on "
            << simd_target() << "\n";
}

TEST(SinCosKernel, WithinTwoUlpOfLongDoubleNearMultiplesOfHalfPi) {
  // The doubles nearest to k pi/2 and their neighbours, for small k, random k and the largest k
  // below 2^24 radians: where x - n pi/2 cancels to a tiny r, sin or cos is tiny too.
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> ks;
  for (std::uint64_t k = 1; k <= 4000; ++k) ks.push_back(k);
  const auto k_max = static_cast<std::uint64_t>(16777216.0 / (std::numbers::pi / 2));
  std::uniform_int_distribution<std::uint64_t> any(1, k_max);
  for (int i = 0; i < 20000; ++i) ks.push_back(any(rng));
  for (std::uint64_t k = k_max - 2000; k <= k_max; ++k) ks.push_back(k);
  const long double half_pi = std::numbers::pi_v<long double> / 2;
  std::vector<double> xs;
  for (const std::uint64_t k : ks) {
    double x = static_cast<double>(static_cast<long double>(k) * half_pi);
    for (int step = 0; step < 3; ++step) x = std::nextafter(x, 0.0);
    for (int step = 0; step < 7; ++step, x = std::nextafter(x, 1e300)) {
      if (x < 16777216.0) xs.push_back(x);
    }
  }
  Worst worst;
  check(xs, worst);
  std::cout << "worst: " << worst.ratio << " of the bound, at x = " << worst.x << "\n";
}

TEST(SinCosKernel, ExactAtZeroAndAccurateForTinyAnglesAndJustBelowTwoToThe24) {
  std::vector<double> xs = {0.0,    std::numeric_limits<double>::denorm_min(),
                            1e-300, 1e-20,
                            1e-8,   0.5,
                            1.0,    std::nextafter(16777216.0, 0.0)};
  std::vector<double> s(xs.size()), c(xs.size());
  detail::sin_cos_values()(xs.data(), xs.size(), s.data(), c.data());
  EXPECT_EQ(s[0], 0.0);
  EXPECT_FALSE(std::signbit(s[0]));
  EXPECT_EQ(c[0], 1.0);
  for (std::size_t i = 1; i < 4; ++i) {  // sin x = x, cos x = 1 in double
    EXPECT_EQ(s[i], xs[i]) << xs[i];
    EXPECT_EQ(c[i], 1.0) << xs[i];
  }
  Worst worst;
  check(xs, worst);
}

TEST(SinCosKernel, FromTwoToThe24AndForNonFiniteAnglesIsLongDoubleStdSinCos) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs = {16777216.0, 16777216.5, 1e9, -16777216.0, 3e15, 1e300, -1e9, 2.0};
  std::vector<double> s(xs.size()), c(xs.size());
  detail::sin_cos_values()(xs.data(), xs.size(), s.data(), c.data());
  for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
    EXPECT_EQ(s[i], static_cast<double>(std::sin(static_cast<long double>(xs[i])))) << xs[i];
    EXPECT_EQ(c[i], static_cast<double>(std::cos(static_cast<long double>(xs[i])))) << xs[i];
  }
  const std::vector<double> bad = {inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  std::vector<double> bs(3), bc(3);
  detail::sin_cos_values()(bad.data(), bad.size(), bs.data(), bc.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(bs[i])) << bad[i];
    EXPECT_TRUE(std::isnan(bc[i])) << bad[i];
  }
}

// The angle form: position * inv_d[i] in double below 2^24, position * inv_ld[i] in long double
// from there (here inv 2^20 at position 32: 2^25 radians).
TEST(SinCosKernel, AnglesUseTheLongDoubleInverseFrequencyFromTwoToThe24) {
  const long double inv_ld[3] = {1.0L, 0.1L, 1048576.0L};
  const double inv_d[3] = {1.0, static_cast<double>(inv_ld[1]), 1048576.0};
  double s[3], c[3];
  detail::sin_cos_angles()(32, inv_d, inv_ld, 3, s, c);
  const std::vector<double> xs = {32.0, 32.0 * inv_d[1]};
  std::vector<double> vs(2), vc(2);
  detail::sin_cos_values()(xs.data(), 2, vs.data(), vc.data());
  EXPECT_EQ(s[0], vs[0]);
  EXPECT_EQ(c[0], vc[0]);
  EXPECT_EQ(s[1], vs[1]);
  EXPECT_EQ(c[1], vc[1]);
  EXPECT_EQ(s[2], static_cast<double>(std::sin(32.0L * inv_ld[2])));
  EXPECT_EQ(c[2], static_cast<double>(std::cos(32.0L * inv_ld[2])));
}

}  // namespace
}  // namespace posemb
