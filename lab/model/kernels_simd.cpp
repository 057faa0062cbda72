// The lab's row kernels (lab/kernels_simd.hpp), compiled once per SIMD target by Highway and run
// on posemb's target through posemb/simd_dispatch.hpp. Every function does the operations its
// header comment spells out, in that order, on every target; scalar tails repeat them lane by
// lane, and row sums use the fixed 16-partial order (Sum16), so every target gives the same bits.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lab/model/kernels_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>

#include "lab/model/kernels_simd.hpp"
#include "lab/model/simd_common-inl.hpp"
#include "posemb/simd_dispatch.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::lab::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// tanh(u) = 1 - 2 / (exp(2u) + 1): +1 and -1 at the saturated ends (exp gives +inf or 0).
HWY_INLINE V Tanh(V u) {
  const D d;
  const V e = Exp(hn::Mul(hn::Set(d, 2.0f), u));
  return hn::Sub(hn::Set(d, 1.0f), hn::Div(hn::Set(d, 2.0f), hn::Add(e, hn::Set(d, 1.0f))));
}
HWY_INLINE float TanhScalar(float u) {
  return 1.0f - 2.0f / (ExpScalar(2.0f * u) + 1.0f);
}

void ExpRow(float* y, const float* x, std::size_t n) {
  const D d;
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Exp(hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] = ExpScalar(x[i]);
}

constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
constexpr float kGelu3A = 3.0f * kGeluA;

void GeluForwardRow(float* y, float* th, const float* x, std::size_t n) {
  const D d;
  const V s = hn::Set(d, kGeluS), a = hn::Set(d, kGeluA), half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const V v = hn::LoadU(d, x + i);
    const V u = hn::Mul(s, hn::Add(v, hn::Mul(hn::Mul(hn::Mul(a, v), v), v)));
    const V t = Tanh(u);
    if (th != nullptr) hn::StoreU(t, d, th + i);
    hn::StoreU(hn::Mul(hn::Mul(half, v), hn::Add(one, t)), d, y + i);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    const float t = TanhScalar(kGeluS * (v + ((kGeluA * v) * v) * v));
    if (th != nullptr) th[i] = t;
    y[i] = (0.5f * v) * (1.0f + t);
  }
}

void GeluBackwardRow(float* dx, const float* dy, const float* x, const float* th, std::size_t n) {
  const D d;
  const V s = hn::Set(d, kGeluS), a3 = hn::Set(d, kGelu3A), half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const V v = hn::LoadU(d, x + i), t = hn::LoadU(d, th + i);
    const V du = hn::Mul(s, hn::Add(one, hn::Mul(hn::Mul(a3, v), v)));
    const V left = hn::Mul(half, hn::Add(one, t));
    const V right = hn::Mul(hn::Mul(hn::Mul(half, v), hn::Sub(one, hn::Mul(t, t))), du);
    hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), hn::Add(left, right)), d, dx + i);
  }
  for (; i < n; ++i) {
    const float v = x[i], t = th[i];
    const float du = kGeluS * (1.0f + (kGelu3A * v) * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + ((0.5f * v) * (1.0f - t * t)) * du);
  }
}

void AddRow(float* x, const float* y, std::size_t n) {
  const D d;
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, x + i);
  }
  for (; i < n; ++i) x[i] = x[i] + y[i];
}

void LayerNormForwardRow(float* y, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, std::size_t c) {
  const D d;
  const float fc = static_cast<float>(c);
  const float mu = Sum16(
                       c, [&](std::size_t i) { return hn::LoadU(d, x + i); },
                       [&](std::size_t i) { return x[i]; }) /
                   fc;
  const V vmu = hn::Set(d, mu);
  const float var = Sum16(
                        c,
                        [&](std::size_t i) {
                          const V e = hn::Sub(hn::LoadU(d, x + i), vmu);
                          return hn::Mul(e, e);
                        },
                        [&](std::size_t i) { return (x[i] - mu) * (x[i] - mu); }) /
                    fc;
  const float rs = 1.0f / std::sqrt(var + 1e-5f);
  const V vrs = hn::Set(d, rs);
  std::size_t i = 0;
  for (; i + N <= c; i += N) {
    const V xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vmu), vrs);
    hn::StoreU(hn::Add(hn::Mul(xh, hn::LoadU(d, w + i)), hn::LoadU(d, b + i)), d, y + i);
  }
  for (; i < c; ++i) y[i] = ((x[i] - mu) * rs) * w[i] + b[i];
  *mean = mu;
  *rstd = rs;
}

void LayerNormBackwardRow(float* dx, const float* dy, const float* x, float mu, float rs,
                          const float* w, std::size_t c) {
  const D d;
  const float fc = static_cast<float>(c);
  const V vmu = hn::Set(d, mu), vrs = hn::Set(d, rs);
  const float s1 =
      Sum16(
          c, [&](std::size_t i) { return hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i)); },
          [&](std::size_t i) { return dy[i] * w[i]; }) /
      fc;
  const float s2 = Sum16(
                       c,
                       [&](std::size_t i) {
                         const V g = hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i));
                         return hn::Mul(hn::Mul(g, hn::Sub(hn::LoadU(d, x + i), vmu)), vrs);
                       },
                       [&](std::size_t i) { return ((dy[i] * w[i]) * (x[i] - mu)) * rs; }) /
                   fc;
  const V vs1 = hn::Set(d, s1), vs2 = hn::Set(d, s2);
  std::size_t i = 0;
  for (; i + N <= c; i += N) {
    const V g = hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i));
    const V xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vmu), vrs);
    const V t = hn::Mul(vrs, hn::Sub(hn::Sub(g, vs1), hn::Mul(xh, vs2)));
    hn::StoreU(hn::Add(hn::LoadU(d, dx + i), t), d, dx + i);
  }
  for (; i < c; ++i) {
    const float g = dy[i] * w[i];
    dx[i] = dx[i] + rs * ((g - s1) - ((x[i] - mu) * rs) * s2);
  }
}

void LayerNormParamColumns(float* aw, float* ab, const float* dy, std::size_t dy_stride,
                           const float* x, std::size_t x_stride, const float* mean,
                           const float* rstd, std::size_t rows, std::size_t n) {
  const D d;
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    V sw = hn::LoadU(d, aw + j), sb = hn::LoadU(d, ab + j);
    for (std::size_t r = 0; r < rows; ++r) {
      const V g = hn::LoadU(d, dy + r * dy_stride + j);
      const V e = hn::Sub(hn::LoadU(d, x + r * x_stride + j), hn::Set(d, mean[r]));
      sw = hn::Add(sw, hn::Mul(hn::Mul(g, e), hn::Set(d, rstd[r])));
      sb = hn::Add(sb, g);
    }
    hn::StoreU(sw, d, aw + j);
    hn::StoreU(sb, d, ab + j);
  }
  for (; j < n; ++j) {
    float sw = aw[j], sb = ab[j];
    for (std::size_t r = 0; r < rows; ++r) {
      const float g = dy[r * dy_stride + j];
      sw = sw + (g * (x[r * x_stride + j] - mean[r])) * rstd[r];
      sb = sb + g;
    }
    aw[j] = sw;
    ab[j] = sb;
  }
}

SoftmaxSums SoftmaxRow(float* dl, const float* l, std::size_t n, std::size_t target, float inv) {
  const D d;
  const float mx = MaxRow(l, n);
  const V vmx = hn::Set(d, mx);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Exp(hn::Sub(hn::LoadU(d, l + i), vmx)), d, dl + i);
  for (; i < n; ++i) dl[i] = ExpScalar(l[i] - mx);
  const float s = Sum16(
      n, [&](std::size_t k) { return hn::LoadU(d, dl + k); }, [&](std::size_t k) { return dl[k]; });
  const float is = 1.0f / s;
  const V vis = hn::Set(d, is), vinv = hn::Set(d, inv);
  for (i = 0; i + N <= n; i += N) {
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, dl + i), vis), vinv), d, dl + i);
  }
  for (; i < n; ++i) dl[i] = (dl[i] * is) * inv;
  dl[target] = dl[target] - inv;
  return {s, mx};
}

}  // namespace posemb::lab::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::lab::simd {

HWY_EXPORT(ExpRow);
HWY_EXPORT(GeluForwardRow);
HWY_EXPORT(GeluBackwardRow);
HWY_EXPORT(AddRow);
HWY_EXPORT(LayerNormForwardRow);
HWY_EXPORT(LayerNormBackwardRow);
HWY_EXPORT(LayerNormParamColumns);
HWY_EXPORT(SoftmaxRow);

ExpRowFn exp_row() {
  return &POSEMB_DISPATCH(ExpRow);
}
GeluForwardRowFn gelu_forward_row() {
  return &POSEMB_DISPATCH(GeluForwardRow);
}
GeluBackwardRowFn gelu_backward_row() {
  return &POSEMB_DISPATCH(GeluBackwardRow);
}
AddRowFn add_row() {
  return &POSEMB_DISPATCH(AddRow);
}
LayerNormForwardRowFn layernorm_forward_row() {
  return &POSEMB_DISPATCH(LayerNormForwardRow);
}
LayerNormBackwardRowFn layernorm_backward_row() {
  return &POSEMB_DISPATCH(LayerNormBackwardRow);
}
LayerNormParamColumnsFn layernorm_param_columns() {
  return &POSEMB_DISPATCH(LayerNormParamColumns);
}
SoftmaxRowFn softmax_row() {
  return &POSEMB_DISPATCH(SoftmaxRow);
}

}  // namespace posemb::lab::simd
#endif  // HWY_ONCE
