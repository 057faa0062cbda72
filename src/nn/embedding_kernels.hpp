// Internal: the embedding kernels behind embed_forward / embed_backward / add_positions_* and the
// layer. They assume validated arguments (checked with assert only).
//
// Two levels. embed_rows_forward / embed_rows_backward (embedding_kernels.cpp) plan the work:
// they cut it into tasks, build the buckets of repeated gradient rows and run the tasks on
// posemb::parallel_for. The tasks themselves are SIMD code compiled for every target
// (embedding_forward_simd.cpp, embedding_backward_simd.cpp), chosen at run time
// (src/core/simd.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "posemb/half.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb::detail {

// The element type of a table the forward reads; outputs and gradients are always float.
enum class TableType : std::uint8_t { f32, bf16, f16 };

// A table as the kernels read it: rows of `stride` elements of `type`. Empty: no table.
struct TableRef {
  const void* data = nullptr;
  std::size_t rows = 0, stride = 0;
  TableType type = TableType::f32;
  bool empty() const noexcept { return data == nullptr; }
};
inline TableRef table_ref(MatrixView<const float> m) {
  return {m.empty() ? nullptr : m.data(), m.rows(), m.row_stride(), TableType::f32};
}
inline TableRef table_ref(MatrixView<const bfloat16> m) {
  return {m.empty() ? nullptr : m.data(), m.rows(), m.row_stride(), TableType::bf16};
}
inline TableRef table_ref(MatrixView<const float16> m) {
  return {m.empty() ? nullptr : m.data(), m.rows(), m.row_stride(), TableType::f16};
}

// The batch's positions, read only with a position table ({} for the token-only kernels):
// either start + t for every token (PositionSource::contiguous, which the backward sums without
// buckets; pos is null), or pos (B*T, row-major, -1 for "no position").
struct BatchPositions {
  const std::int64_t* pos = nullptr;
  bool contiguous = false;
  std::size_t start = 0;  // contiguous only

  // The position row of token n = b*T + t (-1: none).
  std::int64_t at(std::size_t n, std::size_t t) const {
    return contiguous ? static_cast<std::int64_t>(start + t) : pos[n];
  }
};

// A batch's positions resolved and checked as posemb::resolve_positions checks them, for the
// kernels: contiguous positions are their start alone (no array of B*T ids to build and read).
class KernelPositions {
 public:
  KernelPositions(const PositionSource& src, std::size_t batch, std::size_t seq_len,
                  std::size_t max_seq_len, const char* operation);
  KernelPositions(const KernelPositions&) = delete;  // view() points into ids_
  KernelPositions& operator=(const KernelPositions&) = delete;
  BatchPositions view() const { return view_; }

 private:
  Matrix<std::int64_t> ids_;
  BatchPositions view_;
};

// n = b*T + t:
//   with wte: out[n, :] = wte[tokens[b,t], :] + (wpe and pos[n] >= 0 ? wpe[pos[n], :] : 0)
//   without:  out[n, :] += wpe[pos[n], :] where pos[n] >= 0 (the position-only add)
// (pos[n] standing for start + t with contiguous positions, here and below).
// Tables wte and wpe have the same element type. Tokens are read only with wte.
void embed_rows_forward(MatrixView<float> out,             // (B*T, C), written over / added into
                        MatrixView<const TokenId> tokens,  // (B, T), or empty without wte
                        std::size_t batch, std::size_t seq_len,
                        TableRef wte,  // (V, C) or empty
                        TableRef wpe,  // (max_seq_len, C) or empty
                        BatchPositions positions);

// dwte[tokens[b,t], :] += dout[n, :] (when dwte is not empty) and dwpe[pos[n], :] += dout[n, :]
// where pos[n] >= 0 (when dwpe is not empty). Every gradient row adds its contributions in
// ascending n, the order of the serial loop, whatever the thread count: rows used once are
// added directly, contiguous positions sum over the batch in order, and only rows used more
// than once (with non-contiguous positions, or token rows) are bucketed first.
void embed_rows_backward(MatrixView<float> dwte,        // (V, C), added into, or empty
                         MatrixView<float> dwpe,        // (max_seq_len, C), added into, or empty
                         MatrixView<const float> dout,  // (B*T, C)
                         MatrixView<const TokenId> tokens,  // (B, T), or empty without dwte
                         std::size_t batch, std::size_t seq_len, BatchPositions positions);

// ---- The tasks (embedding_forward_simd.cpp, embedding_backward_simd.cpp) ------------------

// The forward cut into tasks of a block of positions t by a block of batch rows b.
struct ForwardJob {
  float* out;
  std::size_t out_stride;
  TableRef wte, wpe;
  const TokenId* tokens;  // (B*T), contiguous
  BatchPositions positions;
  std::size_t B, T, C;
  std::size_t t_per_task, b_per_task, b_tasks;  // task k: t block k / b_tasks, b block k % b_tasks
  bool stream;                                  // write out with streaming (non-temporal) stores
  bool gather;  // read the token rows in groups (tables larger than the caches)
};
using ForwardTaskFn = void (*)(const ForwardJob& job, std::size_t task_begin, std::size_t task_end);
ForwardTaskFn forward_tasks();  // the chosen target's version

// out (t.rows, cols) = the 16-bit table t's first `cols` columns widened to float, exactly (NaN
// payloads kept), written over.
using WidenTableFn = void (*)(const TableRef& t, std::size_t cols, float* out);
WidenTableFn widen_table();  // the chosen target's version

// A gradient row used more than once: dst += src rows order[first .. first + count), in order.
struct Bucket {
  float* dst;
  std::uint32_t first, count;
};

// The backward cut into tasks: row tasks, then bucket tasks, each split into column blocks.
struct BackwardJob {
  const float* dout;
  std::size_t dout_stride;
  std::size_t B, T, C;
  float* dwte;  // or null
  std::size_t dwte_stride;
  const TokenId* tokens;  // (B*T), contiguous
  float* dwpe;            // or null
  std::size_t dwpe_stride;
  BatchPositions positions;  // with dwpe; when contiguous, a row task covers positions t of all
                             // b (else: rows n)
  bool prefetch;             // prefetch the next gradient rows (tables larger than the caches)
  // Per row n: bit 0, its token row is used once (added in the row task); bit 1, its position
  // row is used once (non-contiguous positions only).
  const std::uint8_t* direct;
  std::size_t rows_per_task, row_tasks;
  const Bucket* buckets;
  const std::uint32_t* order;
  const std::uint32_t* bucket_task_first;  // bucket task j: buckets [first[j], first[j + 1])
  std::size_t bucket_tasks;
  std::size_t cols_per_task, col_tasks;  // task k: row or bucket task k / col_tasks
};
using BackwardTaskFn = void (*)(const BackwardJob& job, std::size_t task_begin,
                                std::size_t task_end);
BackwardTaskFn backward_tasks();  // the chosen target's version
// The whole backward as the serial loop, in order (for work that stays on one thread; uses the
// job's gradients, dout, tokens and positions only).
using BackwardSerialFn = void (*)(const BackwardJob& job);
BackwardSerialFn backward_serial();  // the chosen target's version

}  // namespace posemb::detail
