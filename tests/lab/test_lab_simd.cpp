// The lab's SIMD row kernels (lab/model/kernels_simd.hpp): on every target this CPU runs, each
// equals its plain scalar reference (lab_reference.hpp, namespace exact: the same formulas and the
// fixed 16-partial order) bit for bit, at awkward widths; the lab's kernels built on them give the
// same bytes on every target; and lab_exp is within a derived bound of exp computed in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/kernels.hpp"
#include "lab/model/kernels_simd.hpp"
#include "lab_reference.hpp"
#include "posemb/alibi.hpp"
#include "posemb/matrix.hpp"
#include "posemb/simd.hpp"
#include "posemb/simd_dispatch.hpp"

namespace posemb::lab {
namespace {

namespace exact = reference::exact;
using Bytes = std::vector<unsigned char>;

constexpr std::size_t kWidths[] = {1, 3, 15, 16, 17, 64, 65, 768};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.0f,
                                 float offset = 0.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(offset, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <class... Vs>
Bytes bytes_of(const Vs&... vs) {
  Bytes out;
  (
      [&](const auto& v) {
        const auto* p = reinterpret_cast<const unsigned char*>(v.data());
        out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
      }(vs),
      ...);
  return out;
}

// Runs `run` on every target; each result must equal `want` (the scalar reference's bytes).
void expect_on_every_target(const std::string& what, const Bytes& want,
                            const std::function<Bytes()>& run) {
  for (const std::string& t : simd_targets()) {
    detail::set_simd_target(t);
    EXPECT_EQ(run(), want) << what << " on target " << t;
  }
  detail::set_simd_target("");
}

TEST(LabSimd, DispatchIndexFollowsPosembsTarget) {
  for (const std::string& t : simd_targets()) {
    detail::set_simd_target(t);
    EXPECT_EQ(simd_dispatch_index(), detail::simd_table_index()) << t;
  }
  detail::set_simd_target("");
}

// lab_exp against exp in double. Cephes' degree-5 polynomial approximates exp on
// |r| <= ln2/2 + 2^-9 to about 2^-26 relative; the reduction r = (x - n c1) - n c2 is exact
// but for n c2's rounding (|n c2| <= 0.032: under 2^-28 absolute); the polynomial's
// evaluation rounds terms below 0.07 (under 2^-27 relative to y) and the last two additions
// round once each, to at most ulp(y)/2 and ulp(r)/2 <= ulp(y)/4; scaling by 2^a 2^b is exact
// while the result is normal. So the error is below 0.75 ulp + 2^-25 relative < 1.5 ulp of the
// result (measured over every float in [-110, 90]: 0.99 ulp), and below one denorm_min where
// the result is subnormal (one rounding there).
TEST(LabSimd, ExpIsWithinItsBoundOfExpInDoubleAndEqualsTheReference) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 95.0f; v += 0.00137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.7228f, 88.73f, -87.33f, -87.34f, -103.9f,
                  -103.98f, -104.0f, -200.0f, 200.0f, 1e-30f, -1e-30f, 0.5f * std::log(2.0f)}) {
    x.push_back(v);
  }
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::max());
  x.push_back(std::numeric_limits<float>::lowest());
  std::vector<float> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = exact::exp(x[i]);
  expect_on_every_target("lab_exp", bytes_of(want), [&] {
    std::vector<float> y(x.size());
    simd::exp_row()(y.data(), x.data(), x.size());
    return bytes_of(y);
  });
  constexpr double kMinNormal = std::numeric_limits<float>::min();
  constexpr double kMaxFloat = std::numeric_limits<float>::max();
  std::size_t bad = 0;
  double worst_ulp = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::exp(static_cast<double>(x[i])), got = want[i];
    if (e > kMaxFloat) {
      bad += got == std::numeric_limits<float>::infinity() ? 0 : 1;
    } else if (e < kMinNormal) {
      bad += std::fabs(got - e) <= std::numeric_limits<float>::denorm_min() ? 0 : 1;
    } else {
      const double ulp = std::ldexp(1.0, std::ilogb(e) - 23);
      worst_ulp = std::max(worst_ulp, std::fabs(got - e) / ulp);
      bad += std::fabs(got - e) <= 1.5 * ulp ? 0 : 1;
    }
  }
  EXPECT_EQ(bad, 0u) << "worst error " << worst_ulp << " ulp";
  EXPECT_EQ(exact::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exact::exp(-104.0f), 0.0f);
  EXPECT_EQ(exact::exp(0.0f), 1.0f);
  EXPECT_GT(exact::exp(-103.0f), 0.0f);  // gradual underflow
  // tanh's formula saturates to exactly +-1, never NaN.
  EXPECT_EQ(exact::tanh(50.0f), 1.0f);
  EXPECT_EQ(exact::tanh(1e30f), 1.0f);
  EXPECT_EQ(exact::tanh(-50.0f), -1.0f);
  EXPECT_EQ(exact::tanh(-1e30f), -1.0f);
}

TEST(LabSimd, GeluRowsEqualTheReferenceOnEveryTarget) {
  for (std::size_t n : kWidths) {
    auto x = random_floats(n, 100 + n, 3.0f);
    if (n > 2) {
      x[0] = 0.0f;
      x[1] = 40.0f;   // saturated
      x[2] = -40.0f;  // saturated
    }
    const auto dy = random_floats(n, 200 + n);
    std::vector<float> y(n), th(n), dx(n);
    exact::gelu_forward(y.data(), th.data(), x.data(), n);
    exact::gelu_backward(dx.data(), dy.data(), x.data(), th.data(), n);
    const std::string at = " width " + std::to_string(n);
    expect_on_every_target("gelu forward" + at, bytes_of(y, th), [&] {
      std::vector<float> yy(n), tt(n), y2(n);
      simd::gelu_forward_row()(yy.data(), tt.data(), x.data(), n);
      simd::gelu_forward_row()(y2.data(), nullptr, x.data(), n);
      EXPECT_EQ(bytes_of(y2), bytes_of(yy)) << "without th";
      return bytes_of(yy, tt);
    });
    expect_on_every_target("gelu backward" + at, bytes_of(dx), [&] {
      std::vector<float> d(dy);  // dx aliases dy, as the model calls it
      simd::gelu_backward_row()(d.data(), d.data(), x.data(), th.data(), n);
      return bytes_of(d);
    });
    std::vector<float> sum(x);
    for (std::size_t i = 0; i < n; ++i) sum[i] = sum[i] + dy[i];
    expect_on_every_target("add" + at, bytes_of(sum), [&] {
      std::vector<float> s(x);
      simd::add_row()(s.data(), dy.data(), n);
      return bytes_of(s);
    });
  }
}

TEST(LabSimd, LayerNormRowsEqualTheReferenceOnEveryTarget) {
  for (std::size_t c : kWidths) {
    const auto x = random_floats(c, 300 + c, 2.0f, 1.5f), w = random_floats(c, 400 + c);
    const auto b = random_floats(c, 500 + c), dy = random_floats(c, 600 + c);
    const auto dx0 = random_floats(c, 700 + c);
    std::vector<float> y(c), dx(dx0), stats(2);
    exact::layernorm_forward(y.data(), stats[0], stats[1], x.data(), w.data(), b.data(), c);
    exact::layernorm_backward(dx.data(), dy.data(), x.data(), stats[0], stats[1], w.data(), c);
    const std::string at = " width " + std::to_string(c);
    expect_on_every_target("layernorm forward" + at, bytes_of(y, stats), [&] {
      std::vector<float> yy(c), ss(2);
      simd::layernorm_forward_row()(yy.data(), &ss[0], &ss[1], x.data(), w.data(), b.data(), c);
      return bytes_of(yy, ss);
    });
    expect_on_every_target("layernorm backward" + at, bytes_of(dx), [&] {
      std::vector<float> d(dx0);
      simd::layernorm_backward_row()(d.data(), dy.data(), x.data(), stats[0], stats[1], w.data(),
                                     c);
      return bytes_of(d);
    });
    // dw, db: 5 rows of a (5, c + 2) matrix, columns in order per row.
    const std::size_t rows = 5, stride = c + 2;
    const auto X = random_floats(rows * stride, 800 + c), G = random_floats(rows * stride, 900 + c);
    const auto mean = random_floats(rows, 1000 + c), rstd = random_floats(rows, 1100 + c);
    std::vector<float> aw = random_floats(c, 1200 + c), ab = random_floats(c, 1300 + c);
    const std::vector<float> aw0(aw), ab0(ab);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < c; ++j) {
        const float g = G[r * stride + j];
        aw[j] = aw[j] + (g * (X[r * stride + j] - mean[r])) * rstd[r];
        ab[j] = ab[j] + g;
      }
    }
    expect_on_every_target("layernorm dw, db" + at, bytes_of(aw, ab), [&] {
      std::vector<float> sw(aw0), sb(ab0);
      simd::layernorm_param_columns()(sw.data(), sb.data(), G.data(), stride, X.data(), stride,
                                      mean.data(), rstd.data(), rows, c);
      return bytes_of(sw, sb);
    });
  }
}

TEST(LabSimd, SoftmaxRowsEqualTheReferenceOnEveryTarget) {
  for (std::size_t n : kWidths) {
    const auto l = random_floats(n, 1400 + n, 6.0f);
    const std::size_t target = (n * 7) % n;
    std::vector<float> d(n), loss(1);
    loss[0] = exact::softmax_row(d.data(), l.data(), n, target, 1.0f / 37.0f);
    expect_on_every_target("softmax width " + std::to_string(n), bytes_of(d, loss), [&] {
      std::vector<float> dd(n), ll(1);
      const simd::SoftmaxSums s = simd::softmax_row()(dd.data(), l.data(), n, target, 1.0f / 37.0f);
      ll[0] = std::log(s.sum) + s.max - l[target];
      return bytes_of(dd, ll);
    });
  }
}

// ALiBi's bias rows for head h of H (the library's posemb::alibi_forward, one query at position
// last against keys 0..last), `pad` zeros after them: the rows lab/model/attention.cpp passes.
std::vector<float> alibi_row(std::size_t H, std::size_t h, std::size_t last, std::size_t pad) {
  Matrix<float> m(H, last + 1 + pad);
  const auto slopes = alibi_slopes(H);
  alibi_forward(m.view().subcols(0, last + 1), slopes, 1, 1, {.start = last});
  return {m.row(h).begin(), m.row(h).end()};
}

TEST(LabSimd, AttentionRowsEqualTheReferenceOnEveryTarget) {
  // Head widths and sequence lengths around the vector and 16-partial boundaries; without and
  // with ALiBi's bias (and then the backward's gradient of a bias by distance, added into a row
  // that held 0.25).
  for (bool alibi : {false, true}) {
    for (std::size_t hd : {1, 3, 4, 8, 12, 15, 16, 17, 24, 64, 65}) {
      for (std::size_t T : {1, 2, 17, 34}) {
        const std::size_t H = 2, c = H * hd, stride = 3 * c;
        const auto qkv = random_floats(T * stride, 1500 + hd * 100 + T, 1.5f);
        const auto dy = random_floats(T * c, 1600 + hd * 100 + T);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        const std::size_t h = 1;  // the second head: offsets inside the row
        std::vector<float> out(T * hd), P(T * T, 0.0f), dq(T * stride, 0.0f);
        // Row t's bias at bias(t) (AttendRow); the head kernel's at head_bias + T - 1 - t.
        const auto head_bias = alibi_row(H, h, T - 1, simd::ScratchColumns(T));
        const float* hb = alibi ? head_bias.data() : nullptr;
        auto bias = [&](std::size_t t) { return alibi ? head_bias.data() + (T - 1 - t) : nullptr; };
        for (std::size_t t = 0; t < T; ++t) {
          exact::attend_row(out.data() + t * hd, P.data() + t * T, qkv.data() + t * stride + h * hd,
                            qkv.data() + h * hd, stride, c, hd, t, scale, bias(t));
        }
        std::vector<float> dbias(T, 0.25f);
        exact::attention_backward_head(dq.data() + h * hd, stride, dy.data() + h * hd, c,
                                       qkv.data() + h * hd, stride, P.data(), T, c, hd, scale,
                                       alibi ? dbias.data() : nullptr);
        const std::string at = std::string(alibi ? " alibi" : "") + " hd " + std::to_string(hd) +
                               " T " + std::to_string(T);
        expect_on_every_target("attend_row" + at, bytes_of(out, P), [&] {
          std::vector<float> o(T * hd), p(T * T, 0.0f);
          for (std::size_t t = 0; t < T; ++t) {
            simd::attend_row()(o.data() + t * hd, p.data() + t * T,
                               qkv.data() + t * stride + h * hd, qkv.data() + h * hd, stride, c, hd,
                               t, scale, bias(t));
          }
          return bytes_of(o, p);
        });
        // The whole head at once: the same bytes as the reference's rows.
        expect_on_every_target("attend_head" + at, bytes_of(out, P), [&] {
          std::vector<float> o(T * hd), p(T * T, -1.0f), kt(simd::HeadScratchFloats(hd, T), -1.0f);
          simd::AttendHeadJob job{};
          job.y = o.data();
          job.y_stride = hd;
          job.probs = p.data();
          job.qkv = qkv.data() + h * hd;
          job.qkv_stride = stride;
          job.kt = kt.data();
          job.seq_len = T;
          job.c = c;
          job.hd = hd;
          job.scale = scale;
          job.bias = hb;
          simd::attend_head()(job);
          return bytes_of(o, p);
        });
        expect_on_every_target("attention backward" + at, bytes_of(dq, dbias), [&] {
          std::vector<float> d(T * stride, 0.0f), vt(simd::HeadScratchFloats(hd, T), -1.0f);
          std::vector<float> db(T, 0.25f);
          // The head's columns are written over: garbage there must not show.
          for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t part = 0; part < 3; ++part) {
              std::fill_n(d.begin() + static_cast<std::ptrdiff_t>(t * stride + part * c + h * hd),
                          hd, -7.0f);
            }
          }
          simd::AttentionHeadJob job{};
          job.dqkv = d.data() + h * hd;
          job.dqkv_stride = stride;
          job.dy = dy.data() + h * hd;
          job.dy_stride = c;
          job.qkv = qkv.data() + h * hd;
          job.qkv_stride = stride;
          job.probs = P.data();
          job.vt = vt.data();
          job.seq_len = T;
          job.c = c;
          job.hd = hd;
          job.scale = scale;
          job.dbias = alibi ? db.data() : nullptr;
          simd::attention_backward_head()(job);
          return bytes_of(d, db);
        });
      }
    }
  }
}

// The lab's kernels (lab/model/kernels.hpp, lab/model/attention.hpp), which split rows among
// threads and call the row kernels: the same bytes on every target, at a model-like shape.
TEST(LabSimd, LabKernelsGiveTheSameBytesOnEveryTarget) {
  const std::size_t B = 2, T = 19, H = 3, hd = 17, C = H * hd, M = B * T, V = 41;
  auto mat = [](std::size_t r, std::size_t c, std::uint64_t seed, float scale = 1.0f) {
    Matrix<float> m(r, c);
    const auto v = random_floats(r * c, seed, scale);
    std::copy(v.begin(), v.end(), m.flat().begin());
    return m;
  };
  const auto x = mat(M, C, 1, 2.0f), w = mat(1, C, 2), b = mat(1, C, 3), dy = mat(M, C, 4);
  const auto qkv = mat(M, 3 * C, 5, 1.5f), logits = mat(M, V, 6, 4.0f);
  std::vector<std::int32_t> targets(M);
  for (std::size_t i = 0; i < M; ++i) {
    targets[i] = i % 5 == 2 ? -1 : static_cast<std::int32_t>((i * 7) % V);
  }
  auto run = [&] {
    Matrix<float> y(M, C), dx(M, C), dw(1, C), db(1, C), g(M, C), th(M, C), gx(M, C);
    std::vector<float> mean(M), rstd(M);
    layernorm_forward(y, mean, rstd, x, w, b);
    layernorm_backward(dx, dw, db, dy, x, mean, rstd, w);
    gelu_forward(g, th, x);
    gelu_backward(gx, dy, x, th);
    add_into(gx, x);
    Matrix<float> ya(M, C), dqkv(M, 3 * C), dl(M, V);
    std::vector<float> probs(B * H * T * T), losses(M);
    attention_forward(ya, probs, qkv, B, T, H);
    attention_backward(dqkv, {}, dy, probs, qkv, B, T, H);
    // A bias by distance on the scores (the model's alibi encoding: -m_h d) and its gradient.
    Matrix<float> yb(M, C), dqkvb(M, 3 * C), bias(H, T), dbias(H, T);
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t d = 0; d < T; ++d) bias(h, d) = -alibi_slopes(H)[h] * static_cast<float>(d);
    }
    std::vector<float> probsb(B * H * T * T);
    attention_forward(yb, probsb, qkv, B, T, H, bias);
    attention_backward(dqkvb, dbias, dy, probsb, qkv, B, T, H);
    const std::vector<double> mean_loss = {softmax_cross_entropy(dl, losses, logits, targets)};
    Bytes out;
    for (const auto* m : {&y, &dx, &dw, &db, &g, &th, &gx, &ya, &dqkv, &dl, &yb, &dqkvb, &dbias}) {
      const Bytes part = bytes_of(m->flat());
      out.insert(out.end(), part.begin(), part.end());
    }
    const Bytes rest = bytes_of(mean, rstd, probs, losses, mean_loss, probsb);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  };
  detail::set_simd_target("baseline");
  const Bytes baseline = run();
  expect_on_every_target("the lab's kernels", baseline, run);
}

}  // namespace
}  // namespace posemb::lab
