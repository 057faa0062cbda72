// The embedding forward's tasks (embedding_kernels.hpp: ForwardTasks), compiled once per SIMD
// target by Highway's foreach_target and chosen at run time. Every target performs the same float
// additions in the same order (no fused multiply-add: the library is built with
// -ffp-contract=off), and the 16-bit tables widen exactly (embedding_widen-inl.hpp), so all
// targets give bitwise identical results.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/embedding_forward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/simd.hpp"
#include "nn/embedding_kernels.hpp"
#include "nn/embedding_position_only-inl.hpp"
#include "nn/embedding_rows-inl.hpp"
#include "nn/embedding_widen-inl.hpp"
#include "posemb/half.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
// forward on small tables, where each row's few vectors are all the work there is. 16-bit rows
// on 128-bit targets widen 8 elements at a time (widen_pair; on the baseline in SSE2 itself):
// one vector at a time, the integer conversion of float16 (no F16C) and the emulated one made the
// small shape's 16-bit forwards 2.5-4x slower on SSE4 and the baseline than on AVX2.
template <class E, class P>
HWY_INLINE void add_row(float* HWY_RESTRICT out, const E* HWY_RESTRICT a, const P* HWY_RESTRICT b,
                        std::size_t n) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  std::size_t c = 0;
  if constexpr (kPairs && !std::is_same_v<E, float> && std::is_same_v<E, P>) {
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
    for (; c + 8 <= n; c += 8) {
      __m128 a0, a1, b0, b1;
      widen_pair_sse2(a + c, a0, a1);
      widen_pair_sse2(b + c, b0, b1);
      _mm_storeu_ps(out + c, _mm_add_ps(a0, b0));
      _mm_storeu_ps(out + c + 4, _mm_add_ps(a1, b1));
    }
#else
    for (; c + 2 * N <= n; c += 2 * N) {
      hn::Vec<DF> a0, a1, b0, b1;
      widen_pair(d, a + c, a0, a1);
      widen_pair(d, b + c, b0, b1);
      hn::StoreU(hn::Add(a0, b0), d, out + c);
      hn::StoreU(hn::Add(a1, b1), d, out + c + N);
    }
#endif
  }
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

template <class E>
void widen_table_typed(const TableRef& t, std::size_t cols, float* out) {
  const DF d;
  const std::size_t N = hn::Lanes(d);
  for (std::size_t r = 0; r < t.rows; ++r) {
    const E* HWY_RESTRICT a = static_cast<const E*>(t.data) + r * t.stride;
    float* HWY_RESTRICT o = out + r * cols;
    std::size_t c = 0;
    if constexpr (kPairs) {
      for (; c + 2 * N <= cols; c += 2 * N) {
        hn::Vec<DF> v0, v1;
        widen_pair(d, a + c, v0, v1);
        hn::StoreU(v0, d, o + c);
        hn::StoreU(v1, d, o + c + N);
      }
    }
    for (; c + N <= cols; c += N) hn::StoreU(load_widened(d, a + c), d, o + c);
    for (; c < cols; ++c) o[c] = widen(a[c]);
  }
}

void WidenTable(const TableRef& t, std::size_t cols, float* out) {
  if (t.type == TableType::bf16) return widen_table_typed<bfloat16>(t, cols, out);
  widen_table_typed<float16>(t, cols, out);
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

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(ForwardTasks);
HWY_EXPORT(WidenTable);

WidenTableFn widen_table() {
  return &POSEMB_DISPATCH(WidenTable);
}

ForwardTaskFn forward_tasks() {
  return &POSEMB_DISPATCH(ForwardTasks);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
