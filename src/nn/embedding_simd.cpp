// The embedding tasks (embedding_kernels.hpp), compiled once per SIMD target by Highway's
// foreach_target and chosen at run time. Every target performs the same float additions in the
// same order (no fused multiply-add: the library is built with -ffp-contract=off), and the
// 16-bit tables widen exactly, so all targets give bitwise identical results.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/embedding_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/simd.hpp"
#include "nn/embedding_kernels.hpp"
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
// bits in the upper half; float16's exponent and mantissa are moved into place with 16-bit
// operations, 8 lanes at a time: exponent + 112 (+ 112 more for infinity and NaN, whose payload
// is kept), zero kept. A vector with a subnormal (below 2^-14, rare in a trained table) takes
// the exact 32-bit conversion (load_widened) instead.
using DU16 = hn::Repartition<std::uint16_t, DF>;
#if HWY_TARGET == HWY_SSE4 || (HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64)
inline constexpr bool kPairs = true;
#else
inline constexpr bool kPairs = false;
#endif

#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
// The baseline (x86-64: SSE2) does the same in SSE2, whose integer operations it has; Highway's
// emulated interleave compiled into lane-by-lane code (the bfloat16 forward 5.1 ms against 1.5).
// False for a float16 vector with a subnormal (the caller converts it exactly instead).
template <class E>
HWY_INLINE bool widen_pair_sse2(const E* HWY_RESTRICT p, __m128& v0, __m128& v1) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<E, bfloat16>) {
    v0 = _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
    v1 = _mm_castsi128_ps(_mm_unpackhi_epi16(_mm_setzero_si128(), h));
    return true;
  } else {
    const __m128i em = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    const __m128i zero = _mm_cmpeq_epi16(em, _mm_setzero_si128());
    const __m128i small = _mm_cmplt_epi16(em, _mm_set1_epi16(0x0400));
    if (HWY_UNLIKELY(_mm_movemask_epi8(_mm_andnot_si128(zero, small)) != 0)) return false;
    const __m128i inf_nan = _mm_cmpgt_epi16(em, _mm_set1_epi16(0x7bff));
    __m128i up = _mm_add_epi16(_mm_srli_epi16(em, 3), _mm_set1_epi16(0x3800));
    up = _mm_add_epi16(up, _mm_and_si128(inf_nan, _mm_set1_epi16(0x3800)));
    up = _mm_or_si128(_mm_andnot_si128(zero, up),
                      _mm_and_si128(h, _mm_set1_epi16(static_cast<short>(0x8000))));
    const __m128i lo = _mm_slli_epi16(h, 13);
    v0 = _mm_castsi128_ps(_mm_unpacklo_epi16(lo, up));
    v1 = _mm_castsi128_ps(_mm_unpackhi_epi16(lo, up));
    return true;
  }
}
#endif

template <class E>
HWY_INLINE void widen_pair(DF d, const E* HWY_RESTRICT p, hn::Vec<DF>& v0, hn::Vec<DF>& v1) {
  const std::size_t N = hn::Lanes(d);
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
  if constexpr (!std::is_same_v<E, float>) {
    __m128 a, b;
    if (HWY_LIKELY(widen_pair_sse2(p, a, b))) {
      alignas(16) float lanes[8];
      _mm_store_ps(lanes, a);
      _mm_store_ps(lanes + 4, b);
      v0 = hn::Load(d, lanes);
      v1 = hn::Load(d, lanes + 4);
    } else {
      v0 = load_widened(d, p);
      v1 = load_widened(d, p + N);
    }
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
      const auto zero = hn::Eq(em, hn::Zero(du16));
      const auto small = hn::RebindMask(du16, hn::Gt(hn::Set(di16, 0x0400), sem));
      if (HWY_UNLIKELY(!hn::AllFalse(du16, hn::AndNot(zero, small)))) {  // a subnormal
        v0 = load_widened(d, p);
        v1 = load_widened(d, p + N);
        return;
      }
      const auto inf_nan = hn::RebindMask(du16, hn::Gt(sem, hn::Set(di16, 0x7bff)));
      // The float's upper half: sign, exponent and the mantissa's upper 7 bits; the lower half:
      // the mantissa's last 3 bits.
      auto up = hn::Add(hn::ShiftRight<3>(em), hn::Set(du16, 0x3800));
      up = hn::Add(up, hn::IfThenElseZero(inf_nan, hn::Set(du16, 0x3800)));
      up = hn::Or(hn::IfThenZeroElse(zero, up), hn::And(h, hn::Set(du16, 0x8000)));
      const auto lo = hn::ShiftLeft<13>(h);
      v0 = hn::BitCast(d, hn::ZipLower(du32, lo, up));
      v1 = hn::BitCast(d, hn::ZipUpper(du32, lo, up));
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

// ---- Rows ---------------------------------------------------------------------------------

// A non-temporal (streaming) store of v at p (vector-aligned). Highway's emulated 128-bit target
// (the baseline) stores plainly; on x86-64, whose every CPU has SSE2, it streams too, with
// SSE2's store (the same bits: a store changes no value).
HWY_INLINE void stream_store(hn::Vec<DF> v, DF d, float* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
  static_assert(hn::MaxLanes(DF()) == 4);
  alignas(16) float lanes[4];
  hn::Store(v, d, lanes);
  _mm_stream_ps(p, _mm_load_ps(lanes));
#else
  hn::Stream(v, d, p);
#endif
}

// Asks for the cache line of p + c ahead of use (the next row a loop will read: the hardware
// prefetcher does not know where the next randomly chosen row starts).
template <class E>
HWY_INLINE void prefetch(const E* p, std::size_t c) {
  if (p != nullptr) hwy::Prefetch(p + c);
}

// out[c] = a[c] + b[c] (b null: out[c] = a[c]) for c in [0, n). With `stream`, whole vectors go
// out with non-temporal stores (from the first vector-aligned element on). b's elements are a's
// type or floats (a's position rows widened beforehand).
template <class E, class P>
HWY_INLINE void write_row(float* HWY_RESTRICT out, const E* HWY_RESTRICT a, const P* HWY_RESTRICT b,
                          std::size_t n, bool stream) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = 0;
  if (stream) {
    for (; c < n && reinterpret_cast<std::uintptr_t>(out + c) % (N * sizeof(float)) != 0; ++c) {
      out[c] = b != nullptr ? widen(a[c]) + widen(b[c]) : widen(a[c]);
    }
    if (b != nullptr) {
      for (; c + N <= n; c += N) {
        stream_store(hn::Add(load_widened(d, a + c), load_widened(d, b + c)), d, out + c);
      }
    } else {
      for (; c + N <= n; c += N) stream_store(load_widened(d, a + c), d, out + c);
    }
  } else if (b != nullptr) {
    for (; c + N <= n; c += N) {
      hn::StoreU(hn::Add(load_widened(d, a + c), load_widened(d, b + c)), d, out + c);
    }
  } else {
    for (; c + N <= n; c += N) hn::StoreU(load_widened(d, a + c), d, out + c);
  }
  for (; c < n; ++c) out[c] = b != nullptr ? widen(a[c]) + widen(b[c]) : widen(a[c]);
}

// x[c] += a[c] for c in [c0, c1), two vectors a step (the loads of both in flight together).
template <class E>
HWY_INLINE void add_into(float* HWY_RESTRICT x, const E* HWY_RESTRICT a, std::size_t c0,
                         std::size_t c1) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = c0;
  for (; c + 2 * N <= c1; c += 2 * N) {
    const auto x0 = hn::LoadU(d, x + c), x1 = hn::LoadU(d, x + c + N);
    const auto a0 = load_widened(d, a + c), a1 = load_widened(d, a + c + N);
    hn::StoreU(hn::Add(x0, a0), d, x + c);
    hn::StoreU(hn::Add(x1, a1), d, x + c + N);
  }
  for (; c + N <= c1; c += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, x + c), load_widened(d, a + c)), d, x + c);
  }
  for (; c < c1; ++c) x[c] += widen(a[c]);
}

// x[c] += a[c] and (y not null) y[c] += a[c] for c in [c0, c1), reading a once; prefetches
// rows p and q (or null) for the next call.
HWY_INLINE void add_into_both(float* HWY_RESTRICT x, float* HWY_RESTRICT y,
                              const float* HWY_RESTRICT a, std::size_t c0, std::size_t c1,
                              const float* p = nullptr, const float* q = nullptr) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = c0;
  if (y != nullptr) {
    for (; c + N <= c1; c += N) {
      prefetch(p, c);
      prefetch(q, c);
      const auto v = hn::LoadU(d, a + c);
      hn::StoreU(hn::Add(hn::LoadU(d, x + c), v), d, x + c);
      hn::StoreU(hn::Add(hn::LoadU(d, y + c), v), d, y + c);
    }
    for (; c < c1; ++c) {
      x[c] += a[c];
      y[c] += a[c];
    }
  } else {
    for (; c + N <= c1; c += N) {
      prefetch(p, c);
      prefetch(q, c);
      hn::StoreU(hn::Add(hn::LoadU(d, x + c), hn::LoadU(d, a + c)), d, x + c);
    }
    for (; c < c1; ++c) x[c] += a[c];
  }
}

// ---- Forward ------------------------------------------------------------------------------

// On a table larger than the caches the forward writes the token rows of a task kGatherRows at
// a time, vector column by vector column across the rows: the loads of the whole group are in
// flight together, so the cache misses and address translations of many random rows overlap
// instead of waiting row after row. Measured on the GPT-2 shape (4 x 1024 tokens, C = 768, one
// thread, caches flushed): 1.00-1.03 ms against 1.24-1.69 ms for one row at a time with the next
// rows prefetched; 8 rows at once was no faster than 16, 32 (and 32 for 16-bit tables) slower.
constexpr std::size_t kGatherRows = 16;
// While it writes a group, the forward asks for the token rows' lines this many bytes ahead of the
// one it reads, and past the end of the rows for the first lines of the next group's rows: their
// misses start while this group is written. On the GPT-2 shape at one thread, 1.10-1.21x (float
// table) and about 1.07x (16-bit tables) in `posemb bench`, with and without it alternating; no
// change at two threads (docs/layer.md). Asking only within the group's own rows gained 0-4%.
constexpr std::size_t kAheadBytes = 512;

template <class E>
struct Ahead {
  static constexpr std::size_t elements = kAheadBytes / sizeof(E);
  const E* const* rows = nullptr;  // the next group's token rows
  std::size_t g = 0;               // how many (0: none)
};

enum class GroupPos { none, all, some };  // which rows of a group have a position row

// One output element of a group row: a_i[c] (+ b_i[c]), widened, the same single addition as
// write_row.
template <GroupPos kPos, class E, class P>
HWY_INLINE hn::Vec<DF> group_sum(DF d, const E* HWY_RESTRICT a, const P* HWY_RESTRICT b) {
  auto v = load_widened_quick(d, a);
  if constexpr (kPos == GroupPos::all) v = hn::Add(v, load_widened_quick(d, b));
  if constexpr (kPos == GroupPos::some) {
    if (b != nullptr) v = hn::Add(v, load_widened_quick(d, b));
  }
  return v;
}

// Two vectors of group_sum (elements [0, 2N)) by widen_pair.
template <GroupPos kPos, class E, class P>
HWY_INLINE void group_sum2(DF d, const E* HWY_RESTRICT a, const P* HWY_RESTRICT b, hn::Vec<DF>& v0,
                           hn::Vec<DF>& v1) {
  widen_pair(d, a, v0, v1);
  if (kPos == GroupPos::all || (kPos == GroupPos::some && b != nullptr)) {
    hn::Vec<DF> w0, w1;
    widen_pair(d, b, w0, w1);
    v0 = hn::Add(v0, w0);
    v1 = hn::Add(v1, w1);
  }
}

// Floats in a 64-byte cache line of output (the line of every x86-64 CPU).
constexpr std::size_t kLineFloats = 16;

// out_i[c] = a_i[c] + b_i[c] (b_i null: out_i[c] = a_i[c]) for the g rows i of a group and c in
// [0, n): per element the same single addition as write_row. kG > 0 is the group size known at
// compile time (the loop over the rows unrolls), 0 a size g known at run time. With kStream
// every output row must start on a cache line.
//
// The rows are visited line by line: for each line of columns, every row of the group in turn,
// and within a row the whole line, written by consecutive stores. The loads of the group's rows
// are in flight together (their misses overlap), and each streamed line is complete as soon as
// it is started, so it leaves its write-combining buffer at once. Visited vector by vector
// instead (16 rows each with a partly written line), a CPU with fewer write-combining buffers than
// rows in flight flushes partial lines: on AVX2 and SSE4 that made the forward 3-5x slower
// (docs/layer.md). On the scalar target the line is a loop of 16 floats the compiler vectorizes.
template <std::size_t kG, bool kStream, GroupPos kPos, class E, class P>
HWY_INLINE void write_group(float* const* HWY_RESTRICT out, const E* const* HWY_RESTRICT a,
                            const P* const* HWY_RESTRICT b, std::size_t g, std::size_t n,
                            const Ahead<E>& ahead) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  const std::size_t rows = kG > 0 ? kG : g;
  // NaN lanes of the sums: a NaN element makes its sum NaN (so do inf + -inf, redone too).
  auto nan = hn::FirstN(d, 0);
  std::size_t c = 0;
  for (; c + kLineFloats <= n; c += kLineFloats) {
    for (std::size_t i = 0; i < rows; ++i) {
      // The line kAheadBytes on, in this row or else in the next group's row i.
      if (c + ahead.elements < n) {
        hwy::Prefetch(a[i] + c + ahead.elements);
      } else if (i < ahead.g && c + ahead.elements - n < n) {
        hwy::Prefetch(ahead.rows[i] + (c + ahead.elements - n));
      }
      float* HWY_RESTRICT o = out[i] + c;
      const E* HWY_RESTRICT ai = a[i] + c;
      const P* HWY_RESTRICT bi = kPos == GroupPos::none || b[i] == nullptr ? nullptr : b[i] + c;
      if constexpr (kPairs) {
        for (std::size_t k = 0; k < kLineFloats; k += 2 * N) {
          hn::Vec<DF> v0, v1;
          group_sum2<kPos>(d, ai + k, bi == nullptr ? bi : bi + k, v0, v1);
          if constexpr (kStream) {
            stream_store(v0, d, o + k);
            stream_store(v1, d, o + k + N);
          } else {
            hn::StoreU(v0, d, o + k);
            hn::StoreU(v1, d, o + k + N);
          }
        }
      } else {
        for (std::size_t k = 0; k < kLineFloats; k += N) {
          const auto v = group_sum<kPos>(d, ai + k, bi == nullptr ? bi : bi + k);
          if constexpr (kQuietsNaN<E> || kQuietsNaN<P>) nan = hn::Or(nan, hn::IsNaN(v));
          if constexpr (kStream) {
            stream_store(v, d, o + k);
          } else {
            hn::StoreU(v, d, o + k);
          }
        }
      }
    }
  }
  // The columns after the last whole line, row by row: whole vectors, then one by one.
  for (std::size_t i = 0; i < rows; ++i) {
    std::size_t k = c;
    const P* bi = kPos == GroupPos::none ? nullptr : b[i];
    for (; k + N <= n; k += N) {
      const auto v = group_sum<kPos>(d, a[i] + k, bi == nullptr ? bi : bi + k);
      if constexpr (kQuietsNaN<E> || kQuietsNaN<P>) nan = hn::Or(nan, hn::IsNaN(v));
      if constexpr (kStream) {
        stream_store(v, d, out[i] + k);
      } else {
        hn::StoreU(v, d, out[i] + k);
      }
    }
    for (; k < n; ++k) out[i][k] = bi != nullptr ? widen(a[i][k]) + widen(bi[k]) : widen(a[i][k]);
  }
  if ((kQuietsNaN<E> || kQuietsNaN<P>)&&HWY_UNLIKELY(!hn::AllFalse(d, nan))) {
    for (std::size_t i = 0; i < rows; ++i) write_row(out[i], a[i], b[i], n, kStream);  // exactly
  }
}

template <std::size_t kG, bool kStream, class E, class P>
HWY_INLINE void write_group(float* const* out, const E* const* a, const P* const* b, std::size_t g,
                            std::size_t n, const Ahead<E>& ahead) {
  std::size_t with_pos = 0;
  for (std::size_t i = 0; i < g; ++i) with_pos += b[i] != nullptr ? 1 : 0;
  if (with_pos == g) return write_group<kG, kStream, GroupPos::all>(out, a, b, g, n, ahead);
  if (with_pos == 0) return write_group<kG, kStream, GroupPos::none>(out, a, b, g, n, ahead);
  write_group<kG, kStream, GroupPos::some>(out, a, b, g, n, ahead);  // padding in the group
}

// Position rows from 16-bit tables are widened once per group, into floats that stay in L1, where
// widening costs more than a load (float16 without F16C's instruction, bfloat16 on 128-bit
// vectors): the batch rows of a group share their positions (GPT-2's shape: 4 rows each), and
// each would widen them again.
template <class E>
inline constexpr bool kWidenPositionsOnce =
    !std::is_same_v<E, float> &&
    (!kF16C || (std::is_same_v<E, bfloat16> && hn::MaxLanes(DF()) <= 4));

// The distinct position rows of b[0 .. g) widened into `scratch` (rows of n floats), wb[i]
// pointing at b[i]'s (null where b[i] is). False when no two rows share one (nothing done).
template <class E>
bool widen_shared_positions(const E* const* b, std::size_t g, std::size_t n, const float** wb) {
  const E* distinct[kGatherRows];
  std::size_t index[kGatherRows];
  std::size_t count = 0;
  for (std::size_t i = 0; i < g; ++i) {
    std::size_t k = 0;
    while (k < count && distinct[k] != b[i]) ++k;
    if (k == count && b[i] != nullptr) distinct[count++] = b[i];
    index[i] = k;
  }
  if (count == g || count == 0) return false;
  thread_local std::vector<float> scratch;
  if (scratch.size() < count * n) scratch.resize(count * n);
  const DF d;
  const std::size_t N = hn::Lanes(d);
  for (std::size_t k = 0; k < count; ++k) {
    float* row = scratch.data() + k * n;
    std::size_t c = 0;
    if constexpr (kPairs) {
      for (; c + 2 * N <= n; c += 2 * N) {
        hn::Vec<DF> v0, v1;
        widen_pair(d, distinct[k] + c, v0, v1);
        hn::StoreU(v0, d, row + c);
        hn::StoreU(v1, d, row + c + N);
      }
    }
    for (; c + N <= n; c += N) hn::StoreU(load_widened(d, distinct[k] + c), d, row + c);
    for (; c < n; ++c) row[c] = widen(distinct[k][c]);
  }
  for (std::size_t i = 0; i < g; ++i) {
    wb[i] = b[i] == nullptr ? nullptr : scratch.data() + index[i] * n;
  }
  return true;
}

template <std::size_t kG, class E>
HWY_INLINE void write_group(float* const* out, const E* const* a, const E* const* b, std::size_t g,
                            std::size_t n, bool stream, const Ahead<E>& ahead) {
  if (stream) {
    for (std::size_t i = 0; i < g; ++i) {
      if (reinterpret_cast<std::uintptr_t>(out[i]) % (kLineFloats * sizeof(float)) != 0) {
        // Rows not on line boundaries: row after row, each streamed line complete in turn.
        for (std::size_t r = 0; r < g; ++r) write_row(out[r], a[r], b[r], n, true);
        return;
      }
    }
  }
  if constexpr (kWidenPositionsOnce<E>) {
    const float* wb[kGatherRows];
    if (widen_shared_positions(b, g, n, wb)) {
      if (stream) return write_group<kG, true>(out, a, wb, g, n, ahead);
      return write_group<kG, false>(out, a, wb, g, n, ahead);
    }
  }
  if (stream) return write_group<kG, true>(out, a, b, g, n, ahead);
  write_group<kG, false>(out, a, b, g, n, ahead);
}

// A group of gathered rows being written, and the rows of the next group.
template <class E>
struct Group {
  float* out[kGatherRows];
  const E* tok[kGatherRows];
  const E* pos[kGatherRows];
};

// out[c] = a[c] + b[c] for c in [0, n), ordinary stores, two vectors a step: the row loop of the
// forward on small tables, where each row's few vectors are all the work there is.
template <class E, class P>
HWY_INLINE void add_row(float* HWY_RESTRICT out, const E* HWY_RESTRICT a, const P* HWY_RESTRICT b,
                        std::size_t n) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = 0;
  for (; c + 2 * N <= n; c += 2 * N) {
    hn::StoreU(hn::Add(load_widened(d, a + c), load_widened(d, b + c)), d, out + c);
    hn::StoreU(hn::Add(load_widened(d, a + c + N), load_widened(d, b + c + N)), d, out + c + N);
  }
  for (; c + N <= n; c += N) {
    hn::StoreU(hn::Add(load_widened(d, a + c), load_widened(d, b + c)), d, out + c);
  }
  for (; c < n; ++c) out[c] = widen(a[c]) + widen(b[c]);
}

// The forward on tables that stay in the caches (no gathering) and an output written with
// ordinary stores: row after row, the row's position found without a test per row for
// contiguous positions. GPT-2's small shape (C = 64: a few vectors a row) spent more on the
// per-row decisions than on the row.
template <class E, bool kContiguous>
void forward_rows(const ForwardJob& j, std::size_t begin, std::size_t end) {
  const E* wte = static_cast<const E*>(j.wte.data);
  const E* wpe = static_cast<const E*>(j.wpe.data);
  const std::size_t C = j.C, T = j.T, out_stride = j.out_stride;
  const std::size_t wte_stride = j.wte.stride, wpe_stride = j.wpe.stride;
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t t0 = (k / j.b_tasks) * j.t_per_task;
    const std::size_t t1 = t0 + j.t_per_task < T ? t0 + j.t_per_task : T;
    const std::size_t b0 = (k % j.b_tasks) * j.b_per_task;
    const std::size_t b1 = b0 + j.b_per_task < j.B ? b0 + j.b_per_task : j.B;
    for (std::size_t t = t0; t < t1; ++t) {
      for (std::size_t b = b0; b < b1; ++b) {
        const std::size_t n = b * T + t;
        float* o = j.out + n * out_stride;
        const E* row = wte + static_cast<std::size_t>(j.tokens[n]) * wte_stride;
        const E* p = nullptr;
        if constexpr (kContiguous) {
          p = wpe + (j.positions.start + t) * wpe_stride;
        } else if (wpe != nullptr && j.positions.pos[n] >= 0) {
          p = wpe + static_cast<std::size_t>(j.positions.pos[n]) * wpe_stride;
        }
        if (kContiguous || p != nullptr) {
          add_row(o, row, p, C);
        } else {
          write_row(o, row, p, C, false);
        }
      }
    }
  }
}

// The position-only add (no token table) over the tasks [begin, end), one batch row each
// (b_per_task 1), taken in the serial loop's order: task k is batch row k / t_tasks, its block of
// positions k % t_tasks, so that consecutive tasks write consecutive rows of x. The tasks in the
// forward's order (position blocks outer, batch rows inner) visited rows T*C floats apart in turn,
// often a multiple of 4 KiB (each row's loads may alias the stores of the row before), and the add
// ran at 0.43-0.69x llm.c's loop (GPT-2 shape, 1 thread), the narrower targets the slower.
template <class E>
void add_positions_tasks(const ForwardJob& j, std::size_t begin, std::size_t end) {
  const E* wpe = static_cast<const E*>(j.wpe.data);
  const std::size_t t_tasks = (j.T + j.t_per_task - 1) / j.t_per_task;
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t b = k / t_tasks;
    const std::size_t t0 = (k % t_tasks) * j.t_per_task;
    const std::size_t t1 = t0 + j.t_per_task < j.T ? t0 + j.t_per_task : j.T;
    for (std::size_t t = t0; t < t1; ++t) {
      const std::size_t n = b * j.T + t;
      const std::int64_t q = j.positions.at(n, t);
      if (q >= 0) {
        add_into(j.out + n * j.out_stride, wpe + static_cast<std::size_t>(q) * j.wpe.stride, 0,
                 j.C);
      }
    }
  }
}

// The tasks [begin, end): gathered groups are written one group behind, so that the group being
// written knows the next one's rows (to prefetch them); a group may take rows of two tasks.
template <class E>
void forward_tasks_typed(const ForwardJob& j, std::size_t begin, std::size_t end) {
  const E* wte = static_cast<const E*>(j.wte.data);
  const E* wpe = static_cast<const E*>(j.wpe.data);
  if (wte == nullptr) return add_positions_tasks<E>(j, begin, end);
  if (!j.gather && !j.stream) {
    if (wpe != nullptr && j.positions.contiguous) return forward_rows<E, true>(j, begin, end);
    return forward_rows<E, false>(j, begin, end);
  }
  Group<E> groups[2];        // j.gather: the group filling (cur) and the full one before it
  std::size_t cur = 0;       // which of the two is filling
  std::size_t g = 0;         // rows in it
  bool full_before = false;  // groups[1 - cur] is full and not yet written
  Ahead<E> ahead;
  auto write_before = [&](std::size_t next_rows) {  // the full group, the filling one next
    Group<E>& w = groups[1 - cur];
    ahead.rows = groups[cur].tok;
    ahead.g = next_rows;
    write_group<kGatherRows>(w.out, w.tok, w.pos, kGatherRows, j.C, j.stream, ahead);
    full_before = false;
  };
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t t0 = (k / j.b_tasks) * j.t_per_task;
    const std::size_t t1 = t0 + j.t_per_task < j.T ? t0 + j.t_per_task : j.T;
    const std::size_t b0 = (k % j.b_tasks) * j.b_per_task;
    const std::size_t b1 = b0 + j.b_per_task < j.B ? b0 + j.b_per_task : j.B;
    for (std::size_t t = t0; t < t1; ++t) {
      for (std::size_t b = b0; b < b1; ++b) {
        const std::size_t n = b * j.T + t;
        float* o = j.out + n * j.out_stride;
        // pos is read only with a position table (the token-only forward passes none).
        const std::int64_t q = wpe != nullptr ? j.positions.at(n, t) : -1;
        const E* p = q >= 0 ? wpe + static_cast<std::size_t>(q) * j.wpe.stride : nullptr;
        const E* row = wte + static_cast<std::size_t>(j.tokens[n]) * j.wte.stride;
        if (!j.gather) {
          write_row(o, row, p, j.C, j.stream);
          continue;
        }
        Group<E>& f = groups[cur];
        f.out[g] = o;
        f.tok[g] = row;
        f.pos[g] = p;
        if (++g == kGatherRows) {
          if (full_before) write_before(kGatherRows);
          full_before = true;
          cur = 1 - cur;
          g = 0;
        }
      }
    }
  }
  if (full_before) write_before(g);
  if (g != 0) {
    Group<E>& f = groups[cur];
    write_group<0>(f.out, f.tok, f.pos, g, j.C, j.stream, Ahead<E>{});
  }
  // Streaming stores are weakly ordered: make them visible before the task is reported done.
  if (j.stream) hwy::FlushStream();
}

void ForwardTasks(const ForwardJob& job, std::size_t begin, std::size_t end) {
  switch (job.wte.empty() ? job.wpe.type : job.wte.type) {
    case TableType::f32:
      return forward_tasks_typed<float>(job, begin, end);
    case TableType::bf16:
      return forward_tasks_typed<bfloat16>(job, begin, end);
    case TableType::f16:
      return forward_tasks_typed<float16>(job, begin, end);
  }
}

// ---- Backward -----------------------------------------------------------------------------

// The position-only backward with contiguous positions, over positions [t0, t1) and columns
// [c0, c1): dwpe[start + t] += dout[b*T + t] for b = 0, 1, ... in order, as the serial loop adds
// them. Each gradient vector is loaded once per kSumRows batch rows, held in a register while
// their values are added to it in order, and stored once: the gradient rows are read and written
// once (per kSumRows batch rows) instead of once per batch row, and dout is read as kSumRows
// streams at once. GPT-2's shape, 1 thread: 1.25-1.43x llm.c's loop on every target, against
// 0.97-1.00x for blocks of positions added batch row by batch row (docs/layer.md).
constexpr std::size_t kSumRows = 8;

HWY_INLINE void sum_position_rows(const BackwardJob& j, std::size_t t0, std::size_t t1,
                                  std::size_t c0, std::size_t c1) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  for (std::size_t b0 = 0; b0 < j.B; b0 += kSumRows) {
    const std::size_t rows = j.B - b0 < kSumRows ? j.B - b0 : kSumRows;
    for (std::size_t t = t0; t < t1; ++t) {
      float* HWY_RESTRICT g = j.dwpe + (j.positions.start + t) * j.dwpe_stride;
      const float* src[kSumRows];
      for (std::size_t i = 0; i < rows; ++i) {
        src[i] = j.dout + ((b0 + i) * j.T + t) * j.dout_stride;
      }
      std::size_t c = c0;
      for (; c + N <= c1; c += N) {
        auto v = hn::LoadU(d, g + c);
        for (std::size_t i = 0; i < rows; ++i) v = hn::Add(v, hn::LoadU(d, src[i] + c));
        hn::StoreU(v, d, g + c);
      }
      for (; c < c1; ++c) {
        float v = g[c];
        for (std::size_t i = 0; i < rows; ++i) v += src[i][c];
        g[c] = v;
      }
    }
  }
}

// The serial loop itself, for work that stays on one thread: for n = b*T + t in order,
// dwte[tokens[n]] += dout[n] and dwpe[pos[n]] += dout[n], reading dout[n] once. kPrefetch is
// j.prefetch (without it the row loop has no prefetch tests left: rows of 64 floats are 4
// vectors, where every instruction per row shows). The job's fields are copied into locals
// first: read through `j` they were loaded again for every row.
template <bool kPrefetch>
void backward_serial(const BackwardJob& j) {
  const std::size_t B = j.B, T = j.T, C = j.C, n_rows = B * T;
  const TokenId* const tokens = j.tokens;
  float* const dwte = j.dwte;
  float* const dwpe = j.dwpe;
  const std::size_t dwte_stride = j.dwte_stride, dwpe_stride = j.dwpe_stride;
  const std::size_t dout_stride = j.dout_stride;
  const BatchPositions positions = j.positions;
  auto token_row = [=](std::size_t n) -> float* {
    return dwte == nullptr ? nullptr : dwte + static_cast<std::size_t>(tokens[n]) * dwte_stride;
  };
  auto position_row = [=](std::size_t n, std::size_t t) -> float* {  // n = b*T + t
    if (dwpe == nullptr) return nullptr;
    const std::int64_t q = positions.at(n, t);
    return q >= 0 ? dwpe + static_cast<std::size_t>(q) * dwpe_stride : nullptr;
  };
  // The first line of the token row kAhead rows on, so that its address translation (a TLB
  // miss, a page walk) overlaps the rows in between.
  constexpr std::size_t kAhead = 8;
  if (kPrefetch && dwte != nullptr) {
    for (std::size_t n = 1; n < kAhead && n < n_rows; ++n) prefetch(token_row(n), 0);
  }
  const float* d = j.dout;
  if (dwte == nullptr && positions.contiguous) {  // the position-only backward
    sum_position_rows(j, 0, T, 0, C);
    return;
  }
  std::size_t n = 0;
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t, ++n, d += dout_stride) {
      float* te = token_row(n);
      float* pe = position_row(n, t);
      const float* p = nullptr;  // the next row's token and position rows, to prefetch
      const float* q = nullptr;
      if constexpr (kPrefetch) {
        if (dwte != nullptr && n + kAhead < n_rows) prefetch(token_row(n + kAhead), 0);
        if (n + 1 < n_rows) {
          p = token_row(n + 1);
          q = position_row(n + 1, t + 1 < T ? t + 1 : 0);
        }
      }
      if (te != nullptr && pe != nullptr) {
        add_into_both(te, pe, d, 0, C, p, q);
      } else if (te != nullptr || pe != nullptr) {
        add_into_both(te != nullptr ? te : pe, nullptr, d, 0, C, p, q);
      }
    }
  }
}

void BackwardSerial(const BackwardJob& j) {
  if (j.prefetch) {
    backward_serial<true>(j);
  } else {
    backward_serial<false>(j);
  }
}

void BackwardTasks(const BackwardJob& j, std::size_t begin, std::size_t end) {
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t task = k / j.col_tasks;
    const std::size_t c0 = (k % j.col_tasks) * j.cols_per_task;
    const std::size_t c1 = c0 + j.cols_per_task < j.C ? c0 + j.cols_per_task : j.C;
    if (task < j.row_tasks) {
      const std::size_t r0 = task * j.rows_per_task;
      if (j.positions.contiguous) {
        // Positions r0.. of every batch row: dwpe[pos] sums over b in order, without buckets.
        const std::size_t t1 = r0 + j.rows_per_task < j.T ? r0 + j.rows_per_task : j.T;
        if (j.prefetch && j.dwte != nullptr) {  // the page walks of the random rows overlap
          for (std::size_t t = r0; t < t1; ++t) {
            for (std::size_t b = 0; b < j.B; ++b) {
              if ((j.direct[b * j.T + t] & 1u) != 0) {
                prefetch(j.dwte + static_cast<std::size_t>(j.tokens[b * j.T + t]) * j.dwte_stride,
                         c0);
              }
            }
          }
        }
        if (j.dwte == nullptr) {  // the position-only sum
          sum_position_rows(j, r0, t1, c0, c1);
          continue;
        }
        for (std::size_t t = r0; t < t1; ++t) {
          float* dp = j.dwpe + (j.positions.start + t) * j.dwpe_stride;
          for (std::size_t b = 0; b < j.B; ++b) {
            const std::size_t n = b * j.T + t;
            const float* d = j.dout + n * j.dout_stride;
            if (j.dwte != nullptr && (j.direct[n] & 1u) != 0) {
              const auto tok = static_cast<std::size_t>(j.tokens[n]);
              // Prefetch the next batch row's token row (random) and dout row.
              const float* next_te = nullptr;
              const float* next_d = nullptr;
              if (j.prefetch && (b + 1 < j.B || t + 1 < t1)) {
                const std::size_t nb = b + 1 < j.B ? b + 1 : 0, nt = b + 1 < j.B ? t : t + 1;
                next_d = j.dout + (nb * j.T + nt) * j.dout_stride;
                next_te =
                    j.dwte + static_cast<std::size_t>(j.tokens[nb * j.T + nt]) * j.dwte_stride;
              }
              add_into_both(dp, j.dwte + tok * j.dwte_stride, d, c0, c1, next_te, next_d);
            } else {
              add_into(dp, d, c0, c1);
            }
          }
        }
      } else {
        const std::size_t n_rows = j.B * j.T;
        const std::size_t n1 = r0 + j.rows_per_task < n_rows ? r0 + j.rows_per_task : n_rows;
        for (std::size_t n = r0; n < n1; ++n) {
          const std::uint8_t direct = j.direct[n];
          if (direct == 0) continue;
          const float* d = j.dout + n * j.dout_stride;
          float* te = nullptr;
          float* pe = nullptr;
          if ((direct & 1u) != 0) {
            te = j.dwte + static_cast<std::size_t>(j.tokens[n]) * j.dwte_stride;
          }
          if ((direct & 2u) != 0) {
            pe = j.dwpe + static_cast<std::size_t>(j.positions.pos[n]) * j.dwpe_stride;
          }
          if (te != nullptr && pe != nullptr) {
            add_into_both(te, pe, d, c0, c1);
          } else {
            add_into(te != nullptr ? te : pe, d, c0, c1);
          }
        }
      }
    } else {
      const std::size_t bt = task - j.row_tasks;
      for (std::uint32_t i = j.bucket_task_first[bt]; i < j.bucket_task_first[bt + 1]; ++i) {
        const Bucket& bk = j.buckets[i];
        // The destination row stays in L1 while the contributions stream in, in order.
        for (std::uint32_t e = 0; e < bk.count; ++e) {
          add_into(bk.dst, j.dout + std::size_t{j.order[bk.first + e]} * j.dout_stride, c0, c1);
        }
      }
    }
  }
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(ForwardTasks);
HWY_EXPORT(BackwardTasks);
HWY_EXPORT(BackwardSerial);

BackwardSerialFn backward_serial() {
  return &POSEMB_DISPATCH(BackwardSerial);
}
ForwardTaskFn forward_tasks() {
  return &POSEMB_DISPATCH(ForwardTasks);
}
BackwardTaskFn backward_tasks() {
  return &POSEMB_DISPATCH(BackwardTasks);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
