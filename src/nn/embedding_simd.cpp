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

HWY_INLINE hn::Vec<DF> load_widened(DF d, const float16* p) {
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  const auto h16 = hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p));
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // F16C's conversion is exact too, except that it quiets signaling NaNs: NaN lanes (rare) are
  // redone with the integer conversion. (Highway's conversion without F16C mishandles
  // infinities and NaN, hence the integer path on the other targets.)
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto f = hn::PromoteTo(d, hn::BitCast(dh, h16));
  const auto nan = hn::IsNaN(f);
  if (HWY_LIKELY(hn::AllFalse(d, nan))) return f;
  return hn::IfThenElse(nan, widen_f16_bits(d, hn::PromoteTo(du, h16)), f);
#else
  return widen_f16_bits(d, hn::PromoteTo(du, h16));
#endif
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

// Asks for the cache line of p + c ahead of use (the next row a loop will read: the hardware
// prefetcher does not know where the next randomly chosen row starts).
template <class E>
HWY_INLINE void prefetch(const E* p, std::size_t c) {
  if (p != nullptr) hwy::Prefetch(p + c);
}

// Asks for every cache line of the n elements at p to be brought into L2 (prefetcht1): a row
// the forward reads a few rows later. Measured on the GPT-2 shape, the whole row into L2 at once
// is 5-10% faster than a line of it into L1 per vector of the row being written.
template <class E>
HWY_INLINE void prefetch_row_l2(const E* p, std::size_t n) {
  constexpr std::uintptr_t kLine = 64;
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~(kLine - 1);
  const std::uintptr_t last = reinterpret_cast<std::uintptr_t>(p + n) - 1;
  for (std::uintptr_t a = first; a <= last; a += kLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 2);
  }
}

// out[c] = a[c] + b[c] (b null: out[c] = a[c]) for c in [0, n). With `stream`, whole vectors go
// out with non-temporal stores (from the first vector-aligned element on).
template <class E>
HWY_INLINE void write_row(float* HWY_RESTRICT out, const E* HWY_RESTRICT a, const E* HWY_RESTRICT b,
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
        hn::Stream(hn::Add(load_widened(d, a + c), load_widened(d, b + c)), d, out + c);
      }
    } else {
      for (; c + N <= n; c += N) hn::Stream(load_widened(d, a + c), d, out + c);
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

// x[c] += a[c] for c in [c0, c1).
template <class E>
HWY_INLINE void add_into(float* HWY_RESTRICT x, const E* HWY_RESTRICT a, std::size_t c0,
                         std::size_t c1) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = c0;
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

// How many rows ahead of the one being written the forward prefetches a token row (2, 3 and 4
// measured alike for float and 16-bit tables).
constexpr std::size_t kForwardAhead = 3;

template <class E>
void forward_tasks_typed(const ForwardJob& j, std::size_t begin, std::size_t end) {
  const E* wte = static_cast<const E*>(j.wte.data);
  const E* wpe = static_cast<const E*>(j.wpe.data);
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t t0 = (k / j.b_tasks) * j.t_per_task;
    const std::size_t t1 = t0 + j.t_per_task < j.T ? t0 + j.t_per_task : j.T;
    const std::size_t b0 = (k % j.b_tasks) * j.b_per_task;
    const std::size_t b1 = b0 + j.b_per_task < j.B ? b0 + j.b_per_task : j.B;
    if (j.prefetch && wte != nullptr) {
      // The first line of every token row of the task: the address translations of these
      // random rows (TLB misses, page walks) then overlap instead of queueing one by one.
      for (std::size_t t = t0; t < t1; ++t) {
        for (std::size_t b = b0; b < b1; ++b) {
          hwy::Prefetch(wte + static_cast<std::size_t>(j.tokens[b * j.T + t]) * j.wte.stride);
        }
      }
    }
    for (std::size_t t = t0; t < t1; ++t) {
      for (std::size_t b = b0; b < b1; ++b) {
        const std::size_t n = b * j.T + t;
        float* o = j.out + n * j.out_stride;
        // pos is read only with a position table (the token-only forward passes none).
        const std::int64_t q = wpe != nullptr ? j.positions.at(n, t) : -1;
        const E* p = q >= 0 ? wpe + static_cast<std::size_t>(q) * j.wpe.stride : nullptr;
        if (wte != nullptr) {
          const auto tok = static_cast<std::size_t>(j.tokens[n]);
          if (j.prefetch) {
            // The token row kForwardAhead rows on in this task, while this one is written.
            std::size_t nb = b, nt = t;  // steps on in the task's (t, b) order
            for (std::size_t k = 0; k < kForwardAhead; ++k) {
              if (++nb == b1) {
                nb = b0;
                ++nt;
              }
            }
            if (nt < t1) {
              prefetch_row_l2(
                  wte + static_cast<std::size_t>(j.tokens[nb * j.T + nt]) * j.wte.stride, j.C);
            }
          }
          write_row(o, wte + tok * j.wte.stride, p, j.C, j.stream);
        } else if (p != nullptr) {
          add_into(o, p, 0, j.C);
        }
      }
    }
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

// The position-only backward over positions [t0, t1) and columns [c0, c1) (contiguous
// positions): dwpe[start + t] += dout[b*T + t] for b = 0, 1, ... in order, as the serial loop
// adds them, but batch row by batch row over the block, so that the block's gradient rows stay in
// the cache while dout streams through once, in long runs (the serial loop goes through the whole
// dwpe once per batch row).
HWY_INLINE void add_position_rows(const BackwardJob& j, std::size_t t0, std::size_t t1,
                                  std::size_t c0, std::size_t c1) {
  float* const pe0 = j.dwpe + (j.positions.start + t0) * j.dwpe_stride;
  for (std::size_t b = 0; b < j.B; ++b) {
    const float* d = j.dout + (b * j.T + t0) * j.dout_stride;
    float* pe = pe0;
    for (std::size_t t = t0; t < t1; ++t, d += j.dout_stride, pe += j.dwpe_stride) {
      add_into(pe, d, c0, c1);
    }
  }
}

// The position-only backward on one thread takes blocks of positions of about this many bytes of
// gradient rows: well inside a core's L2.
constexpr std::size_t kPositionBlockBytes = std::size_t{192} << 10;

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
    const std::size_t block = std::max<std::size_t>(1, kPositionBlockBytes / (C * sizeof(float)));
    for (std::size_t t0 = 0; t0 < T; t0 += block) {
      add_position_rows(j, t0, t0 + block < T ? t0 + block : T, 0, C);
    }
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
        if (j.prefetch && j.dwte != nullptr) {  // as in the forward: overlap the page walks
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
          add_position_rows(j, r0, t1, c0, c1);
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
