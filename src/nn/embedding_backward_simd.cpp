// The embedding backward's tasks (embedding_kernels.hpp: BackwardSerial, BackwardTasks),
// compiled once per SIMD target by Highway's foreach_target and chosen at run time. Every target
// adds the same floats in the same order (no fused multiply-add: the library is built with
// -ffp-contract=off), so all targets give bitwise identical results.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/embedding_backward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstdint>

#include "core/simd.hpp"
#include "nn/embedding_kernels.hpp"
#include "nn/embedding_position_only-inl.hpp"
#include "nn/embedding_rows-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- Backward -----------------------------------------------------------------------------

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

HWY_EXPORT(BackwardTasks);
HWY_EXPORT(BackwardSerial);

BackwardSerialFn backward_serial() {
  return &POSEMB_DISPATCH(BackwardSerial);
}
BackwardTaskFn backward_tasks() {
  return &POSEMB_DISPATCH(BackwardTasks);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
