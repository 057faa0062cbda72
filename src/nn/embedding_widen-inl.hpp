// Per-target loading of a table's elements as floats for the embedding kernels
// (embedding_forward_simd.cpp, embedding_backward_simd.cpp): exact widening of bfloat16 and
// float16, two vectors at a time on 128-bit targets. Included by each kernel file once per
// Highway target (after hwy/highway.h), so guarded per target, as Highway's own -inl headers are.
#if defined(POSEMB_NN_EMBEDDING_WIDEN_INL_HPP_) == defined(HWY_TARGET_TOGGLE)  // NOLINT
#ifdef POSEMB_NN_EMBEDDING_WIDEN_INL_HPP_
#undef POSEMB_NN_EMBEDDING_WIDEN_INL_HPP_
#else
#define POSEMB_NN_EMBEDDING_WIDEN_INL_HPP_
#endif

#include <hwy/highway.h>
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
#include <emmintrin.h>  // SSE2, for the baseline's widening
#endif

#include <cstdint>
#include <type_traits>

#include "posemb/half.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// ---- Loading a table's elements as floats (exact widening) ----------------------------------

HWY_INLINE hn::Vec<DF> load_widened(DF d, const float* p) {
  return hn::LoadU(d, p);
}

HWY_INLINE hn::Vec<DF> load_widened(DF d, const bfloat16* p) {
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  const auto h = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p)));
  return hn::BitCast(d, hn::ShiftLeft<16>(h));
}

// binary16 -> float with integer operations, exact for every input (NaN payloads kept as
// posemb::float16, numpy and torch keep them).
HWY_INLINE hn::Vec<DF> widen_f16_bits(DF d, hn::Vec<hn::RebindToUnsigned<DF>> h) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto exp = hn::And(hn::ShiftRight<10>(h), hn::Set(du, 0x1fu));
  const auto mant = hn::And(h, hn::Set(du, 0x3ffu));
  const auto normal =
      hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(du, 112u))), hn::ShiftLeft<13>(mant));
  const auto inf_nan = hn::Or(hn::Set(du, 0x7f800000u), hn::ShiftLeft<13>(mant));
  // zero and subnormals: mant * 2^-24, exact in float
  const auto small =
      hn::BitCast(du, hn::Mul(hn::ConvertTo(d, hn::BitCast(di, mant)), hn::Set(d, 0x1p-24f)));
  auto bits = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), small, normal);
  bits = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x1fu)), inf_nan, bits);
  return hn::BitCast(d, hn::Or(bits, sign));
}

// F16C's conversion (x86 targets with AVX2 or AVX-512) is exact, except that it quiets signaling
// NaNs. Highway's conversion without F16C mishandles infinities and NaN, hence the integer path
// on the other targets.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr bool kF16C = true;
#else
inline constexpr bool kF16C = false;
#endif
// load_widened_quick may quiet a NaN of E.
template <class E>
inline constexpr bool kQuietsNaN = kF16C && (std::is_same_v<E, float16>);

// F16C's conversion; used only where kF16C.
HWY_INLINE hn::Vec<DF> widen_f16c(DF d, const float16* p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}

HWY_INLINE hn::Vec<DF> load_widened(DF d, const float16* p) {
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  if constexpr (kF16C) {  // NaN lanes (rare) are redone with the integer conversion
    const auto f = widen_f16c(d, p);
    const auto nan = hn::IsNaN(f);
    if (HWY_LIKELY(hn::AllFalse(d, nan))) return f;
    const auto h16 = hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p));
    return hn::IfThenElse(nan, widen_f16_bits(d, hn::PromoteTo(du, h16)), f);
  }
  const auto h16 = hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p));
  return widen_f16_bits(d, hn::PromoteTo(du, h16));
}

// For the grouped forward: the widening without a data-dependent branch per vector (each
// branch waiting on its load holds back the loads after it). Where kQuietsNaN<E>, F16C's
// conversion alone: the caller checks the sums for NaN and redoes exactly whatever had one.
template <class E>
HWY_INLINE hn::Vec<DF> load_widened_quick(DF d, const E* p) {
  if constexpr (kQuietsNaN<E>) {
    return widen_f16c(d, p);
  } else {
    return load_widened(d, p);
  }
}

// ---- Two vectors at a time on 128-bit targets --------------------------------------------

// On SSE4 a whole vector of 8 16-bit elements widens into two float vectors by interleaving it
// with the low halves (Highway's ZipLower/ZipUpper, in order on 128-bit vectors): bfloat16 is its
// bits in the upper half. float16, 8 lanes at a time with 16-bit operations, then one float
// subtraction and an OR per float vector:
//   up = (|h| >> 3) + (112 << 7): exponent + 112 and the mantissa's upper 7 bits (the lower half:
//   its last 3 bits, h << 13); exponent 0 (zero, subnormal m): exponent 113 instead, i.e.
//   2^-14 (1 + m / 1024), minus 2^-14 leaves m 2^-24 exactly (zero: +0); every other lane minus
//   +0, unchanged (infinity and NaN are still the finite exponent 143 here); then the sign, and
//   for infinity and NaN the all-ones exponent, ORed in (a NaN's payload kept, not quieted).
// Subnormals are not rare: 0.24% of the elements of a N(0, 0.02) table in float16, a vector in
// 50; they once took a branch to the 32-bit conversion.
using DU16 = hn::Repartition<std::uint16_t, DF>;
#if HWY_TARGET == HWY_SSE4 || (HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64)
inline constexpr bool kPairs = true;
#else
inline constexpr bool kPairs = false;
#endif

#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
// The baseline (x86-64: SSE2) does the same in SSE2, whose integer operations it has; Highway's
// emulated interleave compiled into lane-by-lane code (the bfloat16 forward 5.1 ms against 1.5).
template <class E>
HWY_INLINE void widen_pair_sse2(const E* HWY_RESTRICT p, __m128& v0, __m128& v1) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<E, bfloat16>) {
    v0 = _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
    v1 = _mm_castsi128_ps(_mm_unpackhi_epi16(_mm_setzero_si128(), h));
  } else {
    const __m128i z = _mm_setzero_si128();
    const __m128i em = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    const __m128i sign = _mm_xor_si128(h, em);
    const __m128i e0 = _mm_cmplt_epi16(em, _mm_set1_epi16(0x0400));  // exponent 0
    __m128i up = _mm_add_epi16(_mm_srli_epi16(em, 3), _mm_set1_epi16(0x3800));
    up = _mm_add_epi16(up, _mm_and_si128(e0, _mm_set1_epi16(0x0080)));
    const __m128i lo = _mm_slli_epi16(h, 13);
    const __m128i magic = _mm_and_si128(e0, _mm_set1_epi16(0x3880));  // 2^-14's upper half
    const __m128 u0 = _mm_sub_ps(_mm_castsi128_ps(_mm_unpacklo_epi16(lo, up)),
                                 _mm_castsi128_ps(_mm_unpacklo_epi16(z, magic)));
    const __m128 u1 = _mm_sub_ps(_mm_castsi128_ps(_mm_unpackhi_epi16(lo, up)),
                                 _mm_castsi128_ps(_mm_unpackhi_epi16(z, magic)));
    const __m128i inf_nan = _mm_cmpgt_epi16(em, _mm_set1_epi16(0x7bff));
    const __m128i top = _mm_or_si128(sign, _mm_and_si128(inf_nan, _mm_set1_epi16(0x7f80)));
    v0 = _mm_or_ps(u0, _mm_castsi128_ps(_mm_unpacklo_epi16(z, top)));
    v1 = _mm_or_ps(u1, _mm_castsi128_ps(_mm_unpackhi_epi16(z, top)));
  }
}
#endif

template <class E>
HWY_INLINE void widen_pair(DF d, const E* HWY_RESTRICT p, hn::Vec<DF>& v0, hn::Vec<DF>& v1) {
  const std::size_t N = hn::Lanes(d);
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
  if constexpr (!std::is_same_v<E, float>) {
    __m128 a, b;
    widen_pair_sse2(p, a, b);
    alignas(16) float lanes[8];
    _mm_store_ps(lanes, a);
    _mm_store_ps(lanes + 4, b);
    v0 = hn::Load(d, lanes);
    v1 = hn::Load(d, lanes + 4);
    return;
  }
#endif
  if constexpr (kPairs && !std::is_same_v<E, float>) {
    const DU16 du16;
    const hn::RebindToSigned<DU16> di16;
    const hn::Repartition<std::uint32_t, DF> du32;
    const auto h = hn::LoadU(du16, reinterpret_cast<const std::uint16_t*>(p));
    if constexpr (std::is_same_v<E, bfloat16>) {
      v0 = hn::BitCast(d, hn::ZipLower(du32, hn::Zero(du16), h));
      v1 = hn::BitCast(d, hn::ZipUpper(du32, hn::Zero(du16), h));
    } else {
      const auto em = hn::And(h, hn::Set(du16, 0x7fff));  // exponent and mantissa
      const auto sem = hn::BitCast(di16, em);
      const auto z = hn::Zero(du16);
      const auto sign = hn::Xor(h, em);
      const auto e0 = hn::RebindMask(du16, hn::Gt(hn::Set(di16, 0x0400), sem));  // exponent 0
      auto up = hn::Add(hn::ShiftRight<3>(em), hn::Set(du16, 0x3800));
      up = hn::Add(up, hn::IfThenElseZero(e0, hn::Set(du16, 0x0080)));
      const auto lo = hn::ShiftLeft<13>(h);
      const auto magic = hn::IfThenElseZero(e0, hn::Set(du16, 0x3880));  // 2^-14's upper half
      const auto u0 = hn::Sub(hn::BitCast(d, hn::ZipLower(du32, lo, up)),
                              hn::BitCast(d, hn::ZipLower(du32, z, magic)));
      const auto u1 = hn::Sub(hn::BitCast(d, hn::ZipUpper(du32, lo, up)),
                              hn::BitCast(d, hn::ZipUpper(du32, z, magic)));
      const auto inf_nan = hn::RebindMask(du16, hn::Gt(sem, hn::Set(di16, 0x7bff)));
      const auto top = hn::Or(sign, hn::IfThenElseZero(inf_nan, hn::Set(du16, 0x7f80)));
      v0 = hn::Or(u0, hn::BitCast(d, hn::ZipLower(du32, z, top)));
      v1 = hn::Or(u1, hn::BitCast(d, hn::ZipUpper(du32, z, top)));
    }
  } else {
    v0 = load_widened_quick(d, p);
    v1 = load_widened_quick(d, p + N);
  }
}

HWY_INLINE float widen(float x) {
  return x;
}
HWY_INLINE float widen(bfloat16 x) {
  return static_cast<float>(x);
}
HWY_INLINE float widen(float16 x) {
  return static_cast<float>(x);
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
