// The lab's matrix product (lab/model/gemm.hpp): on every SIMD target this CPU runs, equal bit for
// bit to a plain scalar float loop computing the sum in the order the header defines, at awkward
// sizes (0, 1, odd, past the 256-wide blocks), with strides wider than the rows, offset
// pointers, all four transposition patterns, beta 0, 1 and another; the same bits when C is
// computed in row, column or k pieces, or by several threads at once; within a derived bound of
// the product in double; and the argument checks.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "lab/model/gemm.hpp"
#include "posemb/simd.hpp"

namespace posemb::lab {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kPad = 3;  // extra columns in every stride, filled with NaN

struct Case {
  bool ta = false, tb = false;
  std::size_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
};

std::string name(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta);
}

// A stored matrix: rows x cols with stride cols + kPad, starting one float into the buffer (so
// not 16-byte aligned); the padding and the leading float are NaN.
struct Stored {
  std::size_t rows, cols, ld;
  std::vector<float> buf;
  Stored(std::size_t r, std::size_t c, std::uint64_t seed)
      : rows(r), cols(c), ld(c + kPad), buf(1 + r * (c + kPad), kNaN) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (std::size_t i = 0; i < r; ++i) {
      for (std::size_t j = 0; j < c; ++j) buf[1 + i * ld + j] = dist(rng);
    }
  }
  float* data() { return buf.data() + 1; }
  const float* data() const { return buf.data() + 1; }
};

struct Operands {
  Stored a, b, c;
  explicit Operands(const Case& t)
      : a(t.ta ? t.k : t.m, t.ta ? t.m : t.k, 11),
        b(t.tb ? t.n : t.k, t.tb ? t.k : t.n, 12),
        c(t.m, t.n, 13) {}
};

float at(const Stored& s, bool trans, std::size_t i, std::size_t j) {
  return trans ? s.data()[j * s.ld + i] : s.data()[i * s.ld + j];
}

// lab/model/gemm.hpp's definition, as plain scalar float code (this file is compiled with
// -ffp-contract=off, so no multiply and add is fused). C written in place.
void reference_gemm(const Case& t, const Stored& a, const Stored& b, Stored& c) {
  for (std::size_t i = 0; i < t.m; ++i) {
    for (std::size_t j = 0; j < t.n; ++j) {
      float& out = c.data()[i * c.ld + j];
      float s = t.beta == 0.0f ? 0.0f : t.beta == 1.0f ? out : t.beta * out;
      for (std::size_t p = 0; p < t.k; ++p)
        s = s + at(a, t.ta, i, p) * (t.alpha * at(b, t.tb, p, j));
      out = s;
    }
  }
}

void run_gemm(const Case& t, const Operands& o, Stored& c) {
  gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, o.a.data(), o.a.ld, o.b.data(), o.b.ld, t.beta, c.data(),
       c.ld);
}

// The whole buffer of C (padding included: it must stay NaN), compared as bytes.
void expect_same_bytes(const Stored& got, const Stored& want, const std::string& what) {
  ASSERT_EQ(got.buf.size(), want.buf.size());
  EXPECT_EQ(std::memcmp(got.buf.data(), want.buf.data(), got.buf.size() * sizeof(float)), 0)
      << what;
}

void expect_reference_on_every_target(const Case& t) {
  const Operands o(t);
  Stored want = o.c;
  reference_gemm(t, o.a, o.b, want);
  for (const std::string& target : simd_targets()) {
    detail::set_simd_target(target);
    Stored got = o.c;
    run_gemm(t, o, got);
    expect_same_bytes(got, want, name(t) + " on " + target);
  }
  detail::set_simd_target("");
}

std::vector<Case> patterns(std::size_t m, std::size_t n, std::size_t k) {
  std::vector<Case> out;
  for (int pattern = 0; pattern < 4; ++pattern) {
    for (float beta : {0.0f, 1.0f}) {
      out.push_back({pattern / 2 == 1, pattern % 2 == 1, m, n, k, 1.0f, beta});
    }
  }
  return out;
}

TEST(LabGemm, EqualsTheScalarSumBitForBitOnEveryTargetAtAwkwardSizes) {
  constexpr std::size_t kSizes[] = {0, 1, 3, 17, 33, 65};
  for (std::size_t m : kSizes) {
    for (std::size_t n : kSizes) {
      for (std::size_t k : kSizes) {
        for (const Case& t : patterns(m, n, k)) expect_reference_on_every_target(t);
      }
    }
  }
}

// Past the packed block (256 rows of B by 256 columns) in k and n, and many row tiles.
TEST(LabGemm, EqualsTheScalarSumBitForBitPastTheBlocks) {
  for (const auto& [m, n, k] :
       {std::array<std::size_t, 3>{257, 33, 257}, {9, 257, 65}, {33, 300, 530}, {257, 1, 600}}) {
    for (const Case& t : patterns(m, n, k)) expect_reference_on_every_target(t);
  }
}

TEST(LabGemm, AlphaAndBetaOtherThanOneAndZero) {
  for (float alpha : {1.0f, -0.5f, 3.0f}) {
    for (float beta : {0.0f, 1.0f, 0.75f, -2.0f}) {
      expect_reference_on_every_target({false, false, 17, 33, 65, alpha, beta});
      expect_reference_on_every_target({true, true, 33, 17, 65, alpha, beta});
    }
  }
}

// beta = 0 writes over: NaN and infinity in C do not reach the result.
TEST(LabGemm, BetaZeroIgnoresWhatCHeld) {
  const Case t{false, true, 5, 7, 9, 1.0f, 0.0f};
  const Operands o(t);
  Stored want = o.c;
  reference_gemm(t, o.a, o.b, want);
  Stored got = o.c;
  for (std::size_t i = 0; i < t.m; ++i) {
    got.data()[i * got.ld] = kNaN;
    got.data()[i * got.ld + 1] = std::numeric_limits<float>::infinity();
  }
  run_gemm(t, o, got);
  expect_same_bytes(got, want, name(t));
}

// K = 0: C scaled by beta (zeros for beta 0); M or N = 0: nothing touched (null pointers fine).
TEST(LabGemm, EmptyProducts) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  gemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  gemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
  gemm(false, false, 0, 2, 5, 1.0f, nullptr, 5, nullptr, 2, 0.0f, nullptr, 2);
  gemm(true, true, 3, 0, 5, 1.0f, nullptr, 3, nullptr, 5, 0.0f, nullptr, 0);
}

// C computed in pieces gives the same bytes as in one call: row blocks, column blocks, and k in
// two parts (the second with beta = 1 continues the same sum); and several threads at once.
TEST(LabGemm, PiecesAndThreadsGiveTheSameBits) {
  for (const Case& t : patterns(70, 45, 300)) {
    const Operands o(t);
    Stored whole = o.c;
    run_gemm(t, o, whole);
    const auto a_at = [&](std::size_t i, std::size_t p) {
      return o.a.data() + (t.ta ? p * o.a.ld + i : i * o.a.ld + p);
    };
    const auto b_at = [&](std::size_t p, std::size_t j) {
      return o.b.data() + (t.tb ? j * o.b.ld + p : p * o.b.ld + j);
    };
    Stored rows = o.c, cols = o.c, ks = o.c, threads = o.c;
    for (std::size_t i0 = 0; i0 < t.m; i0 += 13) {
      const std::size_t mi = std::min<std::size_t>(13, t.m - i0);
      gemm(t.ta, t.tb, mi, t.n, t.k, t.alpha, a_at(i0, 0), o.a.ld, o.b.data(), o.b.ld, t.beta,
           rows.data() + i0 * rows.ld, rows.ld);
    }
    for (std::size_t j0 = 0; j0 < t.n; j0 += 10) {
      const std::size_t nj = std::min<std::size_t>(10, t.n - j0);
      gemm(t.ta, t.tb, t.m, nj, t.k, t.alpha, o.a.data(), o.a.ld, b_at(0, j0), o.b.ld, t.beta,
           cols.data() + j0, cols.ld);
    }
    gemm(t.ta, t.tb, t.m, t.n, 101, t.alpha, o.a.data(), o.a.ld, o.b.data(), o.b.ld, t.beta,
         ks.data(), ks.ld);
    gemm(t.ta, t.tb, t.m, t.n, t.k - 101, t.alpha, a_at(0, 101), o.a.ld, b_at(101, 0), o.b.ld, 1.0f,
         ks.data(), ks.ld);
#pragma omp parallel for num_threads(3) schedule(static, 1)
    for (int i0 = 0; i0 < static_cast<int>(t.m); i0 += 7) {
      const auto i = static_cast<std::size_t>(i0);
      gemm(t.ta, t.tb, std::min<std::size_t>(7, t.m - i), t.n, t.k, t.alpha, a_at(i, 0), o.a.ld,
           o.b.data(), o.b.ld, t.beta, threads.data() + i * threads.ld, threads.ld);
    }
    expect_same_bytes(rows, whole, name(t) + " in row blocks");
    expect_same_bytes(cols, whole, name(t) + " in column blocks");
    expect_same_bytes(ks, whole, name(t) + " with k in two parts");
    expect_same_bytes(threads, whole, name(t) + " on 3 threads");
  }
}

// Against the product in double: a sequential float sum of k terms, started from c0, is within
// gamma = (k + 1) eps / (1 - (k + 1) eps) of |c0| + sum |a b| (each term's product rounds once,
// each addition once).
TEST(LabGemm, WithinTheFloatSumBoundOfTheProductInDouble) {
  for (const Case& t : patterns(40, 37, 513)) {
    const Operands o(t);
    Stored got = o.c;
    run_gemm(t, o, got);
    const double eps = std::numeric_limits<float>::epsilon() / 2.0;  // unit roundoff
    const double terms = static_cast<double>(t.k + 1);
    const double gamma = terms * eps / (1.0 - terms * eps);
    for (std::size_t i = 0; i < t.m; ++i) {
      for (std::size_t j = 0; j < t.n; ++j) {
        const double c0 = t.beta == 0.0f ? 0.0 : o.c.data()[i * o.c.ld + j];
        double exact = c0, magnitude = std::abs(c0);
        for (std::size_t p = 0; p < t.k; ++p) {
          const double term =
              static_cast<double>(at(o.a, t.ta, i, p)) * static_cast<double>(at(o.b, t.tb, p, j));
          exact += term;
          magnitude += std::abs(term);
        }
        EXPECT_LE(std::abs(got.data()[i * got.ld + j] - exact), gamma * magnitude)
            << name(t) << " at (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(LabGemm, StridesNarrowerThanTheRowsAreRefused) {
  std::vector<float> a(64), b(64), c(64);
  const auto call = [&](bool ta, bool tb, std::size_t lda, std::size_t ldb, std::size_t ldc) {
    gemm(ta, tb, 2, 3, 4, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc);
  };
  EXPECT_NO_THROW(call(false, false, 4, 3, 3));
  EXPECT_NO_THROW(call(true, true, 2, 4, 3));
  try {
    call(false, false, 3, 3, 3);
    ADD_FAILURE() << "lda 3 < K 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "lab::gemm: lda = 3 is less than K = 4");
  }
  EXPECT_THROW(call(true, false, 1, 3, 3), std::invalid_argument);   // lda < M
  EXPECT_THROW(call(false, false, 4, 2, 3), std::invalid_argument);  // ldb < N
  EXPECT_THROW(call(false, true, 4, 3, 3), std::invalid_argument);   // ldb < K
  EXPECT_THROW(call(false, false, 4, 3, 2), std::invalid_argument);  // ldc < N
  const std::vector<float> before = c;
  EXPECT_THROW(call(false, false, 4, 3, 2), std::invalid_argument);
  EXPECT_EQ(c, before);  // nothing written on error
}

}  // namespace
}  // namespace posemb::lab
