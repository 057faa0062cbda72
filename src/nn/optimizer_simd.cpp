// The optimizers' update loops (optimizer_kernels.hpp), compiled once per SIMD target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/optimizer_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <cmath>

#include "core/simd.hpp"
#include "nn/optimizer_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void AdamWRows(const AdamWJob& j, std::size_t r0, std::size_t r1) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  const auto decay = hn::Set(d, j.decay), b1 = hn::Set(d, j.b1), one_b1 = hn::Set(d, j.one_b1);
  const auto b2 = hn::Set(d, j.b2), one_b2 = hn::Set(d, j.one_b2);
  const auto bc2_sqrt = hn::Set(d, j.bc2_sqrt), eps = hn::Set(d, j.eps);
  const auto step = hn::Set(d, j.step_size);
  for (std::size_t r = r0; r < r1; ++r) {
    float* HWY_RESTRICT w = j.value + r * j.value_stride;
    const float* HWY_RESTRICT g = j.grad + r * j.grad_stride;
    float* HWY_RESTRICT m = j.m + r * j.cols;
    float* HWY_RESTRICT v = j.v + r * j.cols;
    std::size_t c = 0;
    for (; c + N <= j.cols; c += N) {
      const auto gc = hn::LoadU(d, g + c);
      const auto mc = hn::Add(hn::Mul(b1, hn::LoadU(d, m + c)), hn::Mul(one_b1, gc));
      const auto vc = hn::Add(hn::Mul(b2, hn::LoadU(d, v + c)), hn::Mul(hn::Mul(one_b2, gc), gc));
      const auto denom = hn::Add(hn::Div(hn::Sqrt(vc), bc2_sqrt), eps);
      const auto wc = hn::Mul(hn::LoadU(d, w + c), decay);
      hn::StoreU(hn::Sub(wc, hn::Mul(step, hn::Div(mc, denom))), d, w + c);
      hn::StoreU(mc, d, m + c);
      hn::StoreU(vc, d, v + c);
    }
    for (; c < j.cols; ++c) {
      w[c] *= j.decay;
      m[c] = j.b1 * m[c] + j.one_b1 * g[c];
      v[c] = j.b2 * v[c] + j.one_b2 * g[c] * g[c];
      const float denom = std::sqrt(v[c]) / j.bc2_sqrt + j.eps;
      w[c] -= j.step_size * (m[c] / denom);
    }
  }
}

void SgdRows(const SgdJob& j, std::size_t r0, std::size_t r1) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  const auto lr = hn::Set(d, j.lr), mu = hn::Set(d, j.momentum), wd = hn::Set(d, j.weight_decay);
  for (std::size_t r = r0; r < r1; ++r) {
    float* HWY_RESTRICT w = j.value + r * j.value_stride;
    const float* HWY_RESTRICT g = j.grad + r * j.grad_stride;
    float* HWY_RESTRICT b = j.velocity + r * j.cols;
    std::size_t c = 0;
    for (; c + N <= j.cols; c += N) {
      const auto wc = hn::LoadU(d, w + c);
      const auto step = hn::Add(hn::LoadU(d, g + c), hn::Mul(wd, wc));
      const auto bc = hn::Add(hn::Mul(mu, hn::LoadU(d, b + c)), step);
      hn::StoreU(bc, d, b + c);
      hn::StoreU(hn::Sub(wc, hn::Mul(lr, bc)), d, w + c);
    }
    for (; c < j.cols; ++c) {
      const float step = g[c] + j.weight_decay * w[c];
      b[c] = j.momentum * b[c] + step;
      w[c] -= j.lr * b[c];
    }
  }
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(AdamWRows);
HWY_EXPORT(SgdRows);

AdamWRowsFn adamw_rows() {
  return &POSEMB_DISPATCH(AdamWRows);
}
SgdRowsFn sgd_rows() {
  return &POSEMB_DISPATCH(SgdRows);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
