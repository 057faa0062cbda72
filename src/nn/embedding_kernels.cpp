#include "embedding_kernels.hpp"

#include "posemb/parallel.hpp"

#include <emmintrin.h>  // SSE2 (x86-64 baseline): streaming stores

#include <cassert>
#include <cstdint>
#include <cstring>
#include <vector>

namespace posemb::detail {
namespace {

// Below this many elements (1 MiB of floats) a kernel runs on the calling thread only: waking
// the team costs more than it saves, and far more on a busy machine.
constexpr std::size_t kParallelThreshold = 1 << 18;
// Outputs of at least this many bytes are written with streaming stores (see add2_stream).
constexpr std::size_t kStreamBytes = std::size_t{8} << 20;

inline void add2(float* __restrict out, const float* __restrict a, const float* __restrict b,
                 std::size_t n) {
#pragma omp simd
  for (std::size_t c = 0; c < n; ++c) out[c] = a[c] + b[c];
}

// out = a + b with streaming (non-temporal) stores: the output of a large forward goes to
// memory without first being read into the cache (saving a third of the traffic). Falls back
// to add2 when out is not 16-byte aligned.
inline void add2_stream(float* __restrict out, const float* __restrict a, const float* __restrict b,
                        std::size_t n) {
  if (reinterpret_cast<std::uintptr_t>(out) % 16 != 0) {
    add2(out, a, b, n);
    return;
  }
  std::size_t c = 0;
  for (; c + 4 <= n; c += 4) {
    _mm_stream_ps(out + c, _mm_add_ps(_mm_loadu_ps(a + c), _mm_loadu_ps(b + c)));
  }
  for (; c < n; ++c) out[c] = a[c] + b[c];
}

inline void add_into(float* __restrict dst, const float* __restrict src, std::size_t n) {
#pragma omp simd
  for (std::size_t c = 0; c < n; ++c) dst[c] += src[c];
}

}  // namespace

void gather_add_rows(MatrixView<float> out, MatrixView<const TokenId> tokens,
                     MatrixView<const float> wte, const Matrix<std::int64_t>& pos,
                     MatrixView<const float> wpe) {
  const std::size_t seq_len = pos.cols();
  const std::size_t n_rows = pos.rows() * seq_len;
  const std::size_t C = out.cols();
  const bool fused = !wte.empty();
  const std::int64_t* p = pos.data();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(n_rows);
  // Streaming stores pay off when the output is much larger than the per-core caches.
  const bool stream = fused && n_rows * C * sizeof(float) >= kStreamBytes;
#pragma omp parallel if (worth_parallel(n_rows * C))
  {
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      const std::size_t r = static_cast<std::size_t>(i);
      float* o = out.row(r).data();
      const std::int64_t q = p[r];
      if (fused) {
        const TokenId tok = tokens(r / seq_len, r % seq_len);
        assert(tok >= 0 && static_cast<std::size_t>(tok) < wte.rows());
        const float* e = wte.row(static_cast<std::size_t>(tok)).data();
        if (q >= 0) {
          assert(static_cast<std::size_t>(q) < wpe.rows());
          if (stream) {
            add2_stream(o, e, wpe.row(static_cast<std::size_t>(q)).data(), C);
          } else {
            add2(o, e, wpe.row(static_cast<std::size_t>(q)).data(), C);
          }
        } else {
          std::memcpy(o, e, C * sizeof(float));
        }
      } else if (q >= 0) {
        assert(static_cast<std::size_t>(q) < wpe.rows());
        add_into(o, wpe.row(static_cast<std::size_t>(q)).data(), C);
      }
    }
    // Streaming stores are weakly ordered: make them visible before the team's barrier.
    if (stream) _mm_sfence();
  }
}

namespace {

// The contributions of one scatter, counting-sorted by target row: order[first[k] ..
// first[k + 1]) are the source rows of the k-th touched row rows[k], ascending.
struct Buckets {
  std::vector<std::uint32_t> rows;
  std::vector<std::uint32_t> first;
  std::vector<std::uint32_t> order;
};

Buckets bucket_by_target(const ScatterTarget& t, std::size_t n_src) {
  const std::size_t R = t.dst.rows();
  auto target = [&](std::size_t i) -> std::int64_t {
    if (t.target64 != nullptr) return t.target64[i];
    return t.target32[(i / t.seq_len) * t.token_stride + i % t.seq_len];
  };
  std::vector<std::uint32_t> count(R, 0);
  for (std::size_t i = 0; i < n_src; ++i) {
    const std::int64_t r = target(i);
    if (r >= 0) {
      assert(static_cast<std::size_t>(r) < R);
      ++count[static_cast<std::size_t>(r)];
    }
  }
  Buckets b;
  std::uint32_t total = 0;
  for (std::size_t r = 0; r < R; ++r) {
    const std::uint32_t c = count[r];
    if (c == 0) continue;
    b.rows.push_back(static_cast<std::uint32_t>(r));
    b.first.push_back(total);
    count[r] = total;  // becomes the insertion cursor
    total += c;
  }
  b.first.push_back(total);
  b.order.resize(total);
  for (std::size_t i = 0; i < n_src; ++i) {
    const std::int64_t r = target(i);
    if (r >= 0) b.order[count[static_cast<std::size_t>(r)]++] = static_cast<std::uint32_t>(i);
  }
  return b;
}

// d += src[order[0]]; d += src[order[1]]; ... in that order (the reference's rounding). The
// destination row stays in L1 between the additions.
void add_rows_in_order(float* __restrict d, MatrixView<const float> src, const std::uint32_t* order,
                       std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) add_into(d, src.row(order[j]).data(), src.cols());
}

}  // namespace

void scatter_add_rows(const ScatterTarget& target, MatrixView<const float> src) {
  const Buckets b = bucket_by_target(target, src.rows());
  // Each touched row is one task, owned by one thread: no two threads write the same row and
  // each row's sum keeps its order.
  const std::ptrdiff_t n_rows = static_cast<std::ptrdiff_t>(b.rows.size());
#pragma omp parallel for schedule(dynamic, 8) if (worth_parallel(b.order.size() * src.cols()))
  for (std::ptrdiff_t k = 0; k < n_rows; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    add_rows_in_order(target.dst.row(b.rows[kk]).data(), src, b.order.data() + b.first[kk],
                      b.first[kk + 1] - b.first[kk]);
  }
}

}  // namespace posemb::detail
