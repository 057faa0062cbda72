// Per-target position-only kernels (no token table): add_positions_forward's tasks
// (embedding_forward_simd.cpp) and add_positions_backward's contiguous sum
// (embedding_backward_simd.cpp). Guarded per target (see embedding_widen-inl.hpp).
#if defined(POSEMB_NN_EMBEDDING_POSITION_ONLY_INL_HPP_) == defined(HWY_TARGET_TOGGLE)  // NOLINT
#ifdef POSEMB_NN_EMBEDDING_POSITION_ONLY_INL_HPP_
#undef POSEMB_NN_EMBEDDING_POSITION_ONLY_INL_HPP_
#else
#define POSEMB_NN_EMBEDDING_POSITION_ONLY_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#include "nn/embedding_kernels.hpp"
#include "nn/embedding_rows-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
