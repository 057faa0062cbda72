// The initializers' fill loop (initializer_kernels.hpp), compiled once per SIMD target. The
// counter-based hashing, the conversions to double, the square root and the products run in SIMD
// lanes; the logarithm and cosine of the normal draw are the C library's, one lane at a time,
// exactly as posemb/random.hpp computes them.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/initializer_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/simd.hpp"
#include "nn/initializer_kernels.hpp"
#include "posemb/random.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using DU = hn::RebindToUnsigned<DD>;

// splitmix64 (posemb/random.hpp) on every lane.
HWY_INLINE hn::Vec<DU> splitmix64_lanes(DU du, hn::Vec<DU> z) {
  z = hn::Add(z, hn::Set(du, 0x9E3779B97F4A7C15ull));
  z = hn::Mul(hn::Xor(z, hn::ShiftRight<30>(z)), hn::Set(du, 0xBF58476D1CE4E5B9ull));
  z = hn::Mul(hn::Xor(z, hn::ShiftRight<27>(z)), hn::Set(du, 0x94D049BB133111EBull));
  return hn::Xor(z, hn::ShiftRight<31>(z));
}

// counter_uniform01 for indices k (base = splitmix64(seed ^ stream * constant)).
HWY_INLINE hn::Vec<DD> uniform_lanes(DD dd, std::uint64_t base, hn::Vec<DU> k) {
  const DU du;
  const hn::RebindToSigned<DD> di;
  const auto bits = splitmix64_lanes(du, hn::Add(hn::Set(du, base), k));
  const auto top = hn::ConvertTo(dd, hn::BitCast(di, hn::ShiftRight<11>(bits)));  // < 2^53: exact
  return hn::Mul(hn::Add(top, hn::Set(dd, 0.5)), hn::Set(dd, 0x1.0p-53));
}

std::uint64_t stream_base(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(seed ^ (stream * 0xD1B54A32D192ED03ull));
}

double scalar_value(const FillJob& j, std::uint64_t k) {
  switch (j.kind) {
    case FillKind::normal:
      return j.scale * counter_normal(j.seed, k);
    case FillKind::uniform:
      return j.scale * (2.0 * counter_uniform01(j.seed, 3, k) - 1.0);
    case FillKind::zeros:
      break;
  }
  return 0.0;
}

void FillRows(const FillJob& j, std::size_t r0, std::size_t r1) {
  const DD dd;
  const DU du;
  const hn::Rebind<float, DD> df;
  const std::size_t N = hn::Lanes(dd);
  const auto scale = hn::Set(dd, j.scale);
  const std::uint64_t base1 = stream_base(j.seed, 1), base2 = stream_base(j.seed, 2);
  const std::uint64_t base3 = stream_base(j.seed, 3);
  HWY_ALIGN double a[hn::MaxLanes(dd)];
  HWY_ALIGN double b[hn::MaxLanes(dd)];
  for (std::size_t r = r0; r < r1; ++r) {
    float* row = j.table + r * j.stride;
    std::size_t c = 0;
    for (; c + N <= j.cols; c += N) {
      const auto k =
          hn::Add(hn::Set(du, static_cast<std::uint64_t>(r * j.cols + c)), hn::Iota(du, 0));
      hn::Vec<DD> v;
      if (j.kind == FillKind::normal) {
        hn::Store(uniform_lanes(dd, base1, k), dd, a);
        hn::Store(hn::Mul(hn::Set(dd, 2.0 * std::numbers::pi), uniform_lanes(dd, base2, k)), dd, b);
        for (std::size_t i = 0; i < N; ++i) {
          a[i] = std::log(a[i]);
          b[i] = std::cos(b[i]);
        }
        const auto radius = hn::Sqrt(hn::Mul(hn::Set(dd, -2.0), hn::Load(dd, a)));
        v = hn::Mul(scale, hn::Mul(radius, hn::Load(dd, b)));
      } else if (j.kind == FillKind::uniform) {
        const auto u = uniform_lanes(dd, base3, k);
        v = hn::Mul(scale, hn::Sub(hn::Mul(hn::Set(dd, 2.0), u), hn::Set(dd, 1.0)));
      } else {
        v = hn::Zero(dd);
      }
      hn::StoreU(hn::DemoteTo(df, v), df, row + c);
    }
    for (; c < j.cols; ++c) row[c] = static_cast<float>(scalar_value(j, r * j.cols + c));
  }
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(FillRows);

FillRowsFn fill_rows() {
  return &POSEMB_DISPATCH(FillRows);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
