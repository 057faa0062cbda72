// Planning the embedding kernels: tasks, buckets of repeated gradient rows, the parallel loop.
// The tasks themselves are in embedding_forward_simd.cpp and embedding_backward_simd.cpp.
#include "embedding_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "core/resolve_positions.hpp"
#include "posemb/parallel.hpp"

namespace posemb::detail {
namespace {

// Outputs of at least this many bytes are written with streaming stores: they go to memory
// without first being read into the cache (a third less traffic), which pays off when the output
// is much larger than the per-core caches.
constexpr std::size_t kStreamBytes = std::size_t{8} << 20;
// Tables of at least this many bytes are larger than a core's L2: the forward reads the token
// rows in groups and the backward prefetches the next gradient rows, and the position rows are
// reused across the batch while in L1 (a task covers a block of positions over several batch
// rows). Smaller problems run in plain row order.
constexpr std::size_t kLargeTableBytes = std::size_t{1} << 20;
// About this many bytes of rows per task: large enough that a task costs far more than taking
// it, small enough that there are many tasks to share when a thread is slow.
constexpr std::size_t kTaskBytes = std::size_t{96} << 10;
// Bucket tasks gather about this many contributions.
constexpr std::size_t kBucketTaskRows = 32;
// Aim for at least this many tasks per thread (columns are split when rows alone give fewer).
constexpr std::size_t kTasksPerThread = 4;

std::size_t rows_per_task(std::size_t C) {
  return std::max<std::size_t>(1, kTaskBytes / (C * sizeof(float)));
}

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// A per-thread array of counters, all zero between calls, for counting rows used by a batch.
// It grows to the largest table seen and is never shrunk (4 bytes per table row).
std::uint32_t* zeroed_counters(std::size_t n) {
  thread_local std::vector<std::uint32_t> counters;
  if (counters.size() < n) counters.resize(n, 0);
  return counters.data();
}

constexpr std::uint32_t kSlot = std::uint32_t{1} << 31;  // counter holds a bucket index

// The token ids as one contiguous array of B*T (a copy only when the view has a row stride).
const TokenId* flat_tokens(MatrixView<const TokenId> tokens, std::vector<TokenId>& copy) {
  if (tokens.empty() || tokens.is_contiguous()) return tokens.data();
  copy.resize(tokens.size());
  for (std::size_t b = 0; b < tokens.rows(); ++b) {
    std::copy(tokens.row(b).begin(), tokens.row(b).end(), copy.begin() + b * tokens.cols());
  }
  return copy.data();
}

// The rows of one gradient that are used more than once get a bucket each (their contributions
// in ascending n); rows used once get flag `bit` in direct[n].
//   target(n) -> the gradient row of contribution n, or -1 for none.
template <class Target>
void plan_rows(std::size_t n_rows, std::size_t table_rows, Target target, float* dst,
               std::size_t dst_stride, std::uint8_t bit, std::vector<std::uint8_t>& direct,
               std::vector<Bucket>& buckets, std::vector<std::uint32_t>& order) {
  std::uint32_t* count = zeroed_counters(table_rows);
  for (std::size_t n = 0; n < n_rows; ++n) {
    const std::int64_t r = target(n);
    if (r >= 0) ++count[static_cast<std::size_t>(r)];
  }
  // Buckets in order of first use; a bucket's counter becomes kSlot | its index.
  std::uint32_t total = static_cast<std::uint32_t>(order.size());
  for (std::size_t n = 0; n < n_rows; ++n) {
    const std::int64_t r = target(n);
    if (r < 0) continue;
    std::uint32_t& c = count[static_cast<std::size_t>(r)];
    if (c == 1) {
      direct[n] |= bit;
    } else if ((c & kSlot) == 0) {
      buckets.push_back({dst + static_cast<std::size_t>(r) * dst_stride, total, 0});
      total += c;
      c = kSlot | static_cast<std::uint32_t>(buckets.size() - 1);
    }
  }
  order.resize(total);
  for (std::size_t n = 0; n < n_rows; ++n) {
    const std::int64_t r = target(n);
    if (r < 0) continue;
    const std::uint32_t c = count[static_cast<std::size_t>(r)];
    if ((c & kSlot) != 0) {
      Bucket& b = buckets[c & ~kSlot];
      order[b.first + b.count++] = static_cast<std::uint32_t>(n);
    }
  }
  for (std::size_t n = 0; n < n_rows; ++n) {
    const std::int64_t r = target(n);
    if (r >= 0) count[static_cast<std::size_t>(r)] = 0;
  }
}

}  // namespace

KernelPositions::KernelPositions(const PositionSource& src, std::size_t batch, std::size_t seq_len,
                                 std::size_t max_seq_len, const char* operation) {
  if (src.kind() == PositionSource::Kind::contiguous) {
    check_contiguous_positions(src.start(), batch, seq_len, max_seq_len, operation, {});
    view_ = {nullptr, true, src.start()};
  } else {
    ids_ = resolve_positions(src, batch, seq_len, max_seq_len, operation, {});
    view_ = {ids_.data(), false, 0};
  }
}

void embed_rows_forward(MatrixView<float> out, MatrixView<const TokenId> tokens, std::size_t batch,
                        std::size_t seq_len, TableRef wte, TableRef wpe, BatchPositions positions) {
  const std::size_t C = out.cols();
  const std::size_t n_rows = batch * seq_len;
  assert(out.rows() == n_rows && (positions.pos != nullptr || positions.contiguous || wpe.empty()));
  assert(wte.empty() || wpe.empty() || wte.type == wpe.type);
  if (wte.empty() && wpe.empty()) return;
  // Small 16-bit tables whose rows the batch uses more than once on average are widened once,
  // and the float forward runs on the copies (the same bits: the widening is exact). Widening
  // each use again cost more than the rest of the forward where the widening takes integer code
  // (float16 without F16C: SSE4 and the baseline): the small shape's float16 forward took 2.5x
  // as long as the float one there.
  const TableRef& any = wte.empty() ? wpe : wte;
  const std::size_t table_rows = (wte.empty() ? 0 : wte.rows) + (wpe.empty() ? 0 : wpe.rows);
  if (any.type != TableType::f32 && table_rows <= n_rows && table_rows * C * 2 < kLargeTableBytes) {
    thread_local std::vector<float> widened;
    if (widened.size() < table_rows * C) widened.resize(table_rows * C);
    const WidenTableFn widen = widen_table();
    TableRef w32 = wte, p32 = wpe;
    float* next = widened.data();
    for (TableRef* t : {&w32, &p32}) {
      if (t->empty()) continue;
      widen(*t, C, next);
      *t = {next, t->rows, C, TableType::f32};
      next += t->rows * C;
    }
    return embed_rows_forward(out, tokens, batch, seq_len, w32, p32, positions);
  }
  // Tasks: a block of positions t by a block of batch rows b, about kTaskBytes of output. Inside
  // a task the batch rows are the inner loop, so that a position row is reused while in L1. The
  // position-only add takes one batch row a task, in the serial loop's order (add_positions_tasks).
  const std::size_t rows = rows_per_task(C);
  const std::size_t element_bytes = (wte.empty() ? wpe : wte).type == TableType::f32 ? 4 : 2;
  const std::size_t wpe_bytes = seq_len * C * element_bytes;
  // At most 8 batch rows: their output rows are T*C floats apart, often a multiple of 4 KiB,
  // which maps them onto the same L1 sets.
  const std::size_t b_per_task = wte.empty() || wpe.empty() || wpe_bytes < kLargeTableBytes
                                     ? 1
                                     : std::min({batch, rows, std::size_t{8}});
  const std::size_t t_per_task = std::max<std::size_t>(1, rows / b_per_task);
  ForwardJob job{};
  job.out = out.data();
  job.out_stride = out.row_stride();
  job.wte = wte;
  job.wpe = wpe;
  std::vector<TokenId> token_copy;
  job.tokens = flat_tokens(tokens, token_copy);
  job.positions = positions;
  job.B = batch;
  job.T = seq_len;
  job.C = C;
  job.t_per_task = t_per_task;
  job.b_per_task = b_per_task;
  job.b_tasks = ceil_div(batch, b_per_task);
  job.stream = !wte.empty() && n_rows * C * sizeof(float) >= kStreamBytes;
  job.gather = !wte.empty() && wte.rows * C * element_bytes >= kLargeTableBytes;
  const std::size_t tasks = ceil_div(seq_len, t_per_task) * job.b_tasks;
  const ForwardTaskFn run = forward_tasks();
  // The gather of token rows waits on scattered loads, which a second thread overlaps: elements.
  // The position-only add streams out (read and written) and the position rows: bytes.
  const std::size_t work =
      !wte.empty() ? n_rows * C : streaming_work(2 * n_rows * C * sizeof(float) + wpe_bytes);
  parallel_for(tasks, 1, work, [&](std::size_t begin, std::size_t end) { run(job, begin, end); });
}

namespace {

// The backward's job without its plan: the gradients, dout, tokens and positions, and whether
// to prefetch the gradient rows (tables larger than a core's L2).
BackwardJob backward_job(MatrixView<float> dwte, MatrixView<float> dwpe,
                         MatrixView<const float> dout, const TokenId* tokens, std::size_t batch,
                         std::size_t seq_len, BatchPositions positions) {
  const std::size_t C = dout.cols();
  BackwardJob job{};
  job.dout = dout.data();
  job.dout_stride = dout.row_stride();
  job.B = batch;
  job.T = seq_len;
  job.C = C;
  job.dwte = dwte.empty() ? nullptr : dwte.data();
  job.dwte_stride = dwte.row_stride();
  job.tokens = tokens;
  job.dwpe = dwpe.empty() ? nullptr : dwpe.data();
  job.dwpe_stride = dwpe.row_stride();
  job.positions = positions;
  job.positions.contiguous = !dwpe.empty() && positions.contiguous;
  job.prefetch = (dwte.empty() ? 0 : dwte.rows()) * C * sizeof(float) >= kLargeTableBytes ||
                 (dwpe.empty() ? 0 : dwpe.rows()) * C * sizeof(float) >= kLargeTableBytes;
  return job;
}

// The rows used more than once, bucketed (plan_rows), and the bucket tasks: consecutive buckets
// of about kBucketTaskRows contributions together, task j being buckets [first[j], first[j + 1]).
struct BucketPlan {
  std::vector<std::uint8_t> direct;
  std::vector<Bucket> buckets;
  std::vector<std::uint32_t> order;
  std::vector<std::uint32_t> task_first{0};
};

void plan_buckets(const BackwardJob& job, MatrixView<float> dwte, MatrixView<float> dwpe,
                  BucketPlan& plan) {
  const std::size_t n_rows = job.B * job.T;
  plan.direct.assign(n_rows, 0);
  if (job.dwte != nullptr) {
    plan_rows(
        n_rows, dwte.rows(), [&](std::size_t n) -> std::int64_t { return job.tokens[n]; },
        dwte.data(), dwte.row_stride(), 1, plan.direct, plan.buckets, plan.order);
  }
  if (job.dwpe != nullptr && !job.positions.contiguous) {
    plan_rows(
        n_rows, dwpe.rows(), [&](std::size_t n) { return job.positions.pos[n]; }, dwpe.data(),
        dwpe.row_stride(), 2, plan.direct, plan.buckets, plan.order);
  }
  std::size_t in_task = 0;
  for (std::size_t i = 0; i < plan.buckets.size(); ++i) {
    in_task += plan.buckets[i].count;
    if (in_task >= kBucketTaskRows || i + 1 == plan.buckets.size()) {
      plan.task_first.push_back(static_cast<std::uint32_t>(i + 1));
      in_task = 0;
    }
  }
}

// Columns: split when there are too few tasks for the threads (a single position row summed
// over a large batch, a batch of one token repeated...), in blocks of whole cache lines.
void split_columns(BackwardJob& job, std::size_t tasks, std::size_t work) {
  const std::size_t wanted = kTasksPerThread * parallel_threads();
  std::size_t col_tasks = 1;
  if (tasks < wanted && worth_parallel(work)) {
    col_tasks = std::min(ceil_div(wanted, tasks), ceil_div(job.C, 16));
  }
  job.cols_per_task = ceil_div(ceil_div(job.C, col_tasks), 16) * 16;
  job.col_tasks = ceil_div(job.C, job.cols_per_task);
}

}  // namespace

void embed_rows_backward(MatrixView<float> dwte, MatrixView<float> dwpe,
                         MatrixView<const float> dout, MatrixView<const TokenId> tokens,
                         std::size_t batch, std::size_t seq_len, BatchPositions positions) {
  const std::size_t C = dout.cols();
  const std::size_t n_rows = batch * seq_len;
  assert(dout.rows() == n_rows &&
         (positions.pos != nullptr || positions.contiguous || dwpe.empty()));
  const bool with_tokens = !dwte.empty();
  if (!with_tokens && dwpe.empty()) return;
  std::vector<TokenId> token_copy;
  BackwardJob job =
      backward_job(dwte, dwpe, dout, flat_tokens(tokens, token_copy), batch, seq_len, positions);
  const bool contiguous = job.positions.contiguous;
  // parallel_for's work: with token rows from a gradient table larger than the caches, the
  // scattered adds (elements), whose cache misses a second thread overlaps. With a smaller table
  // the adds stream through the caches (dout read, gradient rows read and written), and so does
  // the position-only sum (dout and the position rows): bytes, on one thread below
  // kParallelMinStreamBytes. A second thread made the in-cache backward slower there: gradient
  // rows that move between the cores' caches from call to call (B 8-16, T 128, C 256, V 1000:
  // 93-167 us on two threads against 59-150 us on one).
  const std::size_t work =
      with_tokens ? (job.prefetch ? n_rows * C : streaming_work(3 * n_rows * C * sizeof(float)))
                  : streaming_work((n_rows + 2 * seq_len) * C * sizeof(float));
  const bool parallel = worth_parallel(work) && parallel_threads() > 1;
  // Small work, and work that runs on one thread other than the full backward with contiguous
  // positions, runs the serial loop itself: the order to keep, with no plan to make (its
  // position-only sum holds each gradient vector in a register over 8 batch rows). The full
  // backward with
  // contiguous positions takes the tasks below on one thread too: a task adds a position row's
  // contributions from the whole batch while the row is in L1, where the serial loop goes
  // through the position table once per batch row (about 5% faster at 1 thread, GPT-2 shape).
  if (!worth_parallel(n_rows * C) || (!parallel && (!contiguous || !with_tokens))) {
    backward_serial()(job);
    return;
  }
  BucketPlan plan;
  plan_buckets(job, dwte, dwpe, plan);
  job.direct = plan.direct.data();
  job.buckets = plan.buckets.data();
  job.order = plan.order.data();
  job.bucket_task_first = plan.task_first.data();
  job.bucket_tasks = plan.task_first.size() - 1;
  // Row tasks: with contiguous positions a task is a block of positions over the whole batch
  // (each position row sums its batch rows in order); otherwise a block of rows n. (For the
  // position-only sum, a block of positions of about kTaskBytes of gradient rows.)
  const std::size_t rows = rows_per_task(C);
  job.rows_per_task = contiguous && with_tokens ? std::max<std::size_t>(1, rows / batch) : rows;
  job.row_tasks = ceil_div(contiguous ? seq_len : n_rows, job.rows_per_task);
  const std::size_t tasks = job.row_tasks + job.bucket_tasks;
  split_columns(job, tasks, work);
  const BackwardTaskFn run = backward_tasks();
  parallel_for(tasks * job.col_tasks, 1, work,
               [&](std::size_t begin, std::size_t end) { run(job, begin, end); });
}

}  // namespace posemb::detail
