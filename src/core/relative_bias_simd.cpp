// The relative position bias's row kernels (relative_bias_kernels.hpp), compiled once per SIMD
// target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/relative_bias_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/relative_bias_kernels.hpp"
#include "core/simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void BiasRows(const BiasRowsJob& j, std::size_t r0, std::size_t r1) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  for (std::size_t r = r0; r < r1; ++r) {
    const std::size_t h = r / j.queries, i = r % j.queries;
    const float* HWY_RESTRICT src = j.values + h * j.diagonals + (j.queries - 1 - i);
    float* HWY_RESTRICT out = j.bias + r * j.bias_stride;
    if (!j.stream) {
      std::memcpy(out, src, j.keys * sizeof(float));
      continue;
    }
    std::size_t c = 0;
    for (; c < j.keys && reinterpret_cast<std::uintptr_t>(out + c) % (N * sizeof(float)) != 0;
         ++c) {
      out[c] = src[c];
    }
    for (; c + N <= j.keys; c += N) hn::Stream(hn::LoadU(d, src + c), d, out + c);
    for (; c < j.keys; ++c) out[c] = src[c];
  }
  // Streaming stores are weakly ordered: make them visible before the rows are reported done.
  if (j.stream) hwy::FlushStream();
}

void AddWidened(double* HWY_RESTRICT acc, const float* HWY_RESTRICT row, std::size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const std::size_t N = hn::Lanes(dd);
  std::size_t k = 0;
  for (; k + 2 * N <= n; k += 2 * N) {
    const auto a = hn::PromoteTo(dd, hn::LoadU(df, row + k));
    const auto b = hn::PromoteTo(dd, hn::LoadU(df, row + k + N));
    hn::StoreU(hn::Add(hn::LoadU(dd, acc + k), a), dd, acc + k);
    hn::StoreU(hn::Add(hn::LoadU(dd, acc + k + N), b), dd, acc + k + N);
  }
  for (; k < n; ++k) acc[k] += static_cast<double>(row[k]);
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(BiasRows);
HWY_EXPORT(AddWidened);

BiasRowsFn bias_rows() {
  return &POSEMB_DISPATCH(BiasRows);
}
AddWidenedFn add_widened() {
  return &POSEMB_DISPATCH(AddWidened);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
