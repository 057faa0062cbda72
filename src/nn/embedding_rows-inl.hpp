// Per-target row operations of the embedding kernels (embedding_forward_simd.cpp,
// embedding_backward_simd.cpp): a row written (with streaming stores or not), added into one or
// two rows, the prefetch of the next rows. Guarded per target (see embedding_widen-inl.hpp).
#if defined(POSEMB_NN_EMBEDDING_ROWS_INL_HPP_) == defined(HWY_TARGET_TOGGLE)  // NOLINT
#ifdef POSEMB_NN_EMBEDDING_ROWS_INL_HPP_
#undef POSEMB_NN_EMBEDDING_ROWS_INL_HPP_
#else
#define POSEMB_NN_EMBEDDING_ROWS_INL_HPP_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#include "nn/embedding_widen-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
