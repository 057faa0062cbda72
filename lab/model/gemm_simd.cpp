// The lab's matrix product (lab/gemm.hpp), compiled once per SIMD target by Highway and run on
// posemb's target through posemb/simd_dispatch.hpp.
//
// Vectorized across the columns of C: for each p in ascending order, a[i][p] is broadcast and
// multiplied by a vector of B's row p, and the product added to C's accumulator (separate Mul and
// Add; this file is compiled with -ffp-contract=off, lab/CMakeLists.txt). A lane holds one
// element of C from start to end, so each element is the plain sequential sum lab/gemm.hpp
// defines, whatever the vector width. Blocking changes only which elements are computed
// together: B is packed, kKc rows by kJc columns at a time, into panels two vectors wide (scaled
// by alpha, zero-padded past N: the padding lanes are computed and dropped), and a register tile
// of kRows rows of C by one panel runs over the block's rows of B; between blocks of k the
// running sums wait in C itself (a float stored and loaded back is unchanged).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lab/model/gemm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
#include <emmintrin.h>  // SSE2, for the baseline's tile
#endif

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/model/gemm.hpp"
#include "posemb/simd_dispatch.hpp"

#ifndef POSEMB_LAB_GEMM_SIMD_BLOCKS_
#define POSEMB_LAB_GEMM_SIMD_BLOCKS_
namespace posemb::lab::gemm_detail {
// The packed block of B: kKc rows by kJc columns (every target's panel width divides kJc).
constexpr std::size_t kKc = 256;
constexpr std::size_t kJc = 256;
}  // namespace posemb::lab::gemm_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace posemb::lab::gemm_detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr std::size_t kN = hn::MaxLanes(D());
constexpr std::size_t kW = 2 * kN;               // panel width: two vectors
constexpr std::size_t kRows = kN >= 16 ? 8 : 6;  // register tile: kRows x 2 accumulators
static_assert(kJc % kW == 0, "panels must tile the packed block");

// Packs op(B)[p0 + p][j0 + j] * alpha (p < kc, j < jc) into panels of kW columns: panel q holds
// kc rows of kW floats, columns past jc set to 0. out: (ceil(jc / kW), kc, kW), written over.
void PackB(float* out, bool trans_b, const float* b, std::size_t ldb, std::size_t p0,
           std::size_t kc, std::size_t j0, std::size_t jc, float alpha) {
  for (std::size_t q = 0; q * kW < jc; ++q) {
    float* panel = out + q * kc * kW;
    const std::size_t jq = j0 + q * kW, w = std::min(kW, jc - q * kW);
    if (w < kW) std::fill_n(panel, kc * kW, 0.0f);
    if (!trans_b) {
      for (std::size_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + jq;
        for (std::size_t x = 0; x < w; ++x) panel[p * kW + x] = alpha * src[x];
      }
    } else {
      for (std::size_t x = 0; x < w; ++x) {
        const float* src = b + (jq + x) * ldb + p0;
        for (std::size_t p = 0; p < kc; ++p) panel[p * kW + x] = alpha * src[p];
      }
    }
  }
}

// C[r][0, kW) += sum over p < kc of A(r, p) * panel[p], r < R, in p order. A(r, p) is
// a[r * ars + p * acs]; panel row p at panel + p * bs (kW floats); c: (R, kW) with row stride
// ldc, added into.
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
// The baseline: Highway's emulated target loops over the 4 lanes of each operation, which the
// compiler vectorized only in part (a third of the tile's multiplies came out one lane at a
// time: 0.8 flops per instruction). Every x86-64 CPU has SSE2, whose 4-lane multiply and add are
// the same float operations: the tile in SSE2 (2.5 flops per instruction).
template <std::size_t R>
HWY_INLINE void Tile(std::size_t kc, const float* a, std::size_t ars, std::size_t acs,
                     const float* panel, std::size_t bs, float* c, std::size_t ldc) {
  static_assert(kN == 4);
  __m128 c0[R], c1[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    c0[r] = _mm_loadu_ps(c + r * ldc);
    c1[r] = _mm_loadu_ps(c + r * ldc + 4);
  }
  for (std::size_t p = 0; p < kc; ++p) {
    const __m128 b0 = _mm_loadu_ps(panel + p * bs), b1 = _mm_loadu_ps(panel + p * bs + 4);
    const float* ap = a + p * acs;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const __m128 av = _mm_set1_ps(ap[r * ars]);
      c0[r] = _mm_add_ps(c0[r], _mm_mul_ps(av, b0));
      c1[r] = _mm_add_ps(c1[r], _mm_mul_ps(av, b1));
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    _mm_storeu_ps(c + r * ldc, c0[r]);
    _mm_storeu_ps(c + r * ldc + 4, c1[r]);
  }
}
#else
template <std::size_t R>
HWY_INLINE void Tile(std::size_t kc, const float* a, std::size_t ars, std::size_t acs,
                     const float* panel, std::size_t bs, float* c, std::size_t ldc) {
  const D d;
  V c0[R], c1[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    c0[r] = hn::LoadU(d, c + r * ldc);
    c1[r] = hn::LoadU(d, c + r * ldc + kN);
  }
  for (std::size_t p = 0; p < kc; ++p) {
    const V b0 = hn::LoadU(d, panel + p * bs), b1 = hn::LoadU(d, panel + p * bs + kN);
    const float* ap = a + p * acs;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const V av = hn::Set(d, ap[r * ars]);
      c0[r] = hn::Add(c0[r], hn::Mul(av, b0));
      c1[r] = hn::Add(c1[r], hn::Mul(av, b1));
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    hn::StoreU(c0[r], d, c + r * ldc);
    hn::StoreU(c1[r], d, c + r * ldc + kN);
  }
}
#endif

template <std::size_t R>
void TileRows(std::size_t kc, const float* a, std::size_t ars, std::size_t acs, const float* panel,
              std::size_t bs, float* c, std::size_t ldc, std::size_t w) {
  if (w == kW) return Tile<R>(kc, a, ars, acs, panel, bs, c, ldc);
  // The last panel, w < kW columns of C: through a padded copy.
  alignas(64) float tmp[R * kW] = {};
  for (std::size_t r = 0; r < R; ++r) std::copy_n(c + r * ldc, w, tmp + r * kW);
  Tile<R>(kc, a, ars, acs, panel, bs, tmp, kW);
  for (std::size_t r = 0; r < R; ++r) std::copy_n(tmp + r * kW, w, c + r * ldc);
}

// One register tile of `rows` (1..kRows) rows of C by one panel (w columns of C).
void RowTile(std::size_t rows, std::size_t kc, const float* a, std::size_t ars, std::size_t acs,
             const float* panel, std::size_t bs, float* c, std::size_t ldc, std::size_t w) {
  switch (rows) {
    case 1:
      return TileRows<1>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 2:
      return TileRows<2>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 3:
      return TileRows<3>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 4:
      return TileRows<4>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 5:
      return TileRows<5>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 6:
      return TileRows<6>(kc, a, ars, acs, panel, bs, c, ldc, w);
    case 7:
      return TileRows<7>(kc, a, ars, acs, panel, bs, c, ldc, w);
    default:
      return TileRows<kRows>(kc, a, ars, acs, panel, bs, c, ldc, w);
  }
}

// C += op(A) (alpha op(B)) in lab/gemm.hpp's order (beta already applied by the caller).
// pack: kKc * kJc floats of scratch.
void GemmAccumulate(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                    float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                    float* c, std::size_t ldc, float* pack) {
  const std::size_t ars = trans_a ? 1 : lda, acs = trans_a ? lda : 1;
  for (std::size_t j0 = 0; j0 < n; j0 += kJc) {
    const std::size_t jc = std::min(kJc, n - j0);
    for (std::size_t p0 = 0; p0 < k; p0 += kKc) {
      const std::size_t kc = std::min(kKc, k - p0);
      // B's rows are already panels when B is not transposed, not scaled and the block is whole
      // panels: the tiles read them in place (a copy times 1 changes no value). Packing them
      // took 6% of the demo's training step, most of it for the weight gradients' 32 x 32 tiles
      // over all the batch's rows.
      const bool direct = !trans_b && alpha == 1.0f && jc % kW == 0;
      if (!direct) PackB(pack, trans_b, b, ldb, p0, kc, j0, jc, alpha);
      const float* panels = direct ? b + p0 * ldb + j0 : pack;
      const std::size_t bs = direct ? ldb : kW, panel_step = direct ? kW : kc * kW;
      for (std::size_t i0 = 0; i0 < m; i0 += kRows) {
        const std::size_t rows = std::min(kRows, m - i0);
        const float* ai = a + i0 * ars + p0 * acs;
        for (std::size_t q = 0; q * kW < jc; ++q) {
          RowTile(rows, kc, ai, ars, acs, panels + q * panel_step, bs, c + i0 * ldc + j0 + q * kW,
                  ldc, std::min(kW, jc - q * kW));
        }
      }
    }
  }
}

}  // namespace posemb::lab::gemm_detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::lab {
namespace gemm_detail {

HWY_EXPORT(GemmAccumulate);

void check_stride(const char* name, std::size_t stride, std::size_t width, const char* what) {
  if (stride < width) {
    throw std::invalid_argument("lab::gemm: " + std::string(name) + " = " + std::to_string(stride) +
                                " is less than " + what + " = " + std::to_string(width));
  }
}

}  // namespace gemm_detail

void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc) {
  using namespace gemm_detail;
  if (m == 0 || n == 0) return;
  check_stride("lda", lda, trans_a ? m : k, trans_a ? "M" : "K");
  check_stride("ldb", ldb, trans_b ? k : n, trans_b ? "K" : "N");
  check_stride("ldc", ldc, n, "N");
  for (std::size_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill_n(row, n, 0.0f);
    } else if (beta != 1.0f) {
      for (std::size_t j = 0; j < n; ++j) row[j] = beta * row[j];
    }
  }
  if (k == 0) return;
  thread_local std::vector<float> pack(kKc * kJc);
  POSEMB_DISPATCH(GemmAccumulate)
  (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc, pack.data());
}

}  // namespace posemb::lab
#endif  // HWY_ONCE
