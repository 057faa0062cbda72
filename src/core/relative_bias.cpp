// T5's relative position bias, forward and backward (posemb/relative_bias.hpp).
//
// The bias is constant along each diagonal: query i and key j have the relative position
// d(i, j) = (key_start + j) - (query_start + i), so with k = (Tq - 1 - i) + j (0 <= k < Tq + Tk -
// 1, ascending with d) row i of head h is the slice [Tq - 1 - i, Tq - 1 - i + Tk) of one array per
// head, values[h][k] = table[bucket(k)][h]. The forward builds those arrays (one bucket per
// relative position, computed run by run) and copies a slice into each row. The backward sums
// dbias along the same diagonals, then each bucket's diagonals.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/overlap.hpp"
#include "core/relative_bias_kernels.hpp"
#include "core/relative_buckets.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"
#include "posemb/relative_bias.hpp"

namespace posemb {
namespace {

constexpr std::size_t kMaxStart = std::size_t{1} << 62;
// About this many elements of bias per forward chunk.
constexpr std::size_t kChunkElements = std::size_t{1} << 14;
// Query rows of a head summed together by one backward task (the documented order).
constexpr std::size_t kQueryBlock = 64;
// Biases of at least this many bytes are written with streaming stores: to memory without first
// reading the lines into the cache (half the traffic), paying off when the bias is larger than
// the per-core caches.
constexpr std::size_t kStreamBytes = std::size_t{8} << 20;

std::string n(std::size_t v) {
  return std::to_string(v);
}

struct Geometry {
  detail::BucketRule rule;
  std::size_t heads, queries, keys;
  std::int64_t first;  // the relative position of k = 0: query Tq - 1, key 0
  std::size_t diagonals() const { return queries + keys - 1; }
};

// The checks forward and backward share, before anything is written. `values` is the bias
// (dbias), `table` the table (dtable); their names for the messages.
Geometry validate(const char* op, const char* values_name, MatrixView<const float> values,
                  const char* table_name, MatrixView<const float> table,
                  const RelativeBuckets& buckets, std::size_t queries,
                  const RelativeBiasOptions& o) {
  const detail::BucketRule rule = detail::BucketRule::checked(op, buckets);
  if (table.rows() != buckets.num_buckets) {
    throw std::invalid_argument(std::string(op) + ": " + table_name + " has " + n(table.rows()) +
                                " rows, expected num_buckets = " + n(buckets.num_buckets) +
                                " (one row per bucket, one column per head)");
  }
  const std::size_t heads = table.cols();
  const std::size_t rows = saturating_mul(heads, queries);
  if (rows == SIZE_MAX || values.rows() != rows) {
    throw std::invalid_argument(std::string(op) + ": " + values_name + " has " + n(values.rows()) +
                                " rows, expected H*Tq = " + n(heads) + "*" + n(queries) +
                                " (one row per query of each head; H is " + table_name +
                                "'s columns)");
  }
  for (const auto& [name, start] :
       {std::pair{"query_start", o.query_start}, std::pair{"key_start", o.key_start}}) {
    if (start > kMaxStart) {
      throw std::invalid_argument(std::string(op) + ": " + name + " = " + n(start) +
                                  " is past 2^62");
    }
  }
  Geometry g{rule, heads, queries, values.cols(), 0};
  if (queries != 0 && g.keys != 0) {
    // Every relative position is within +-2^63: starts <= 2^62, and a view of floats has at
    // most 2^62 rows and columns.
    g.first = static_cast<std::int64_t>(o.key_start) -
              static_cast<std::int64_t>(o.query_start + (queries - 1));
  }
  return g;
}

// The runs of equal buckets along the diagonals (run r covers [begin[r], begin[r + 1]), the last
// ending at the diagonal count).
struct Diagonals {
  std::vector<detail::BucketRun> runs;
  std::size_t count;
  std::size_t end(std::size_t r) const { return r + 1 < runs.size() ? runs[r + 1].begin : count; }
};

Diagonals diagonal_runs(const Geometry& g) {
  return {g.rule.runs(g.first, g.diagonals()), g.diagonals()};
}

}  // namespace

void relative_bias_forward(MatrixView<float> bias, MatrixView<const float> table,
                           const RelativeBuckets& buckets, std::size_t queries,
                           const RelativeBiasOptions& options) {
  constexpr const char* op = "relative_bias_forward";
  const Geometry g = validate(op, "bias", bias, "table", table, buckets, queries, options);
  detail::check_no_overlap(op, "bias", bias, "table", table);
  if (bias.empty()) return;
  const std::size_t D = g.diagonals();
  const std::size_t bytes = bias.size() * sizeof(float);
  if (g.queries == 1) {
    // One query (cached decoding): each head's row is its values; written run by run.
    const Diagonals diag = diagonal_runs(g);
    parallel_for(g.heads, 1, streaming_work(bytes), [&](std::size_t begin, std::size_t end) {
      for (std::size_t h = begin; h < end; ++h) {
        float* row = bias.row(h).data();
        for (std::size_t r = 0; r < diag.runs.size(); ++r) {
          std::fill(row + diag.runs[r].begin, row + diag.end(r), table(diag.runs[r].bucket, h));
        }
      }
    });
    return;
  }
  check_allocation(op, saturating_mul(saturating_mul(g.heads, D), sizeof(float)));
  const Diagonals diag = diagonal_runs(g);
  std::vector<float> values(g.heads * D);
  for (std::size_t h = 0; h < g.heads; ++h) {
    float* v = values.data() + h * D;
    for (std::size_t r = 0; r < diag.runs.size(); ++r) {
      std::fill(v + diag.runs[r].begin, v + diag.end(r), table(diag.runs[r].bucket, h));
    }
  }
  const detail::BiasRowsJob job{bias.data(), bias.row_stride(),    values.data(), D, g.queries,
                                g.keys,      bytes >= kStreamBytes};
  const detail::BiasRowsFn rows = detail::bias_rows();
  const std::size_t grain = std::max<std::size_t>(1, kChunkElements / g.keys);
  parallel_for(bias.rows(), grain, streaming_work(bytes),
               [&](std::size_t begin, std::size_t end) { rows(job, begin, end); });
}

void relative_bias_backward(MatrixView<float> dtable, MatrixView<const float> dbias,
                            const RelativeBuckets& buckets, std::size_t queries,
                            const RelativeBiasOptions& options) {
  constexpr const char* op = "relative_bias_backward";
  const Geometry g = validate(op, "dbias", dbias, "dtable", MatrixView<const float>(dtable),
                              buckets, queries, options);
  detail::check_no_overlap(op, "dtable", dtable, "dbias", dbias);
  if (dbias.empty()) return;
  const std::size_t blocks = (g.queries + kQueryBlock - 1) / kQueryBlock;

  // Each bucket is one run (BucketRule::runs), so a run's sum is its bucket's.
  const Diagonals diag = diagonal_runs(g);
  const std::size_t runs = diag.runs.size();
  auto run_of = [&](std::size_t k) {  // the run of diagonal k
    const auto after =
        std::upper_bound(diag.runs.begin(), diag.runs.end(), k,
                         [](std::size_t v, const detail::BucketRun& run) { return v < run.begin; });
    return static_cast<std::size_t>(after - diag.runs.begin()) - 1;
  };
  // Block b (query rows [i0, i1)) reaches diagonals [Tq - i1, Tq - i0 + Tk - 1), so the runs
  // [first_run[b], first_run[b] + block_runs[b]); its sums are at part_offset[b] in each head's
  // part of `parts`.
  std::vector<std::size_t> first_run(blocks), block_runs(blocks), part_offset(blocks + 1, 0);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t i0 = b * kQueryBlock, i1 = std::min(g.queries, i0 + kQueryBlock);
    first_run[b] = run_of(g.queries - i1);
    block_runs[b] = run_of(g.queries - i0 + g.keys - 2) - first_run[b] + 1;
    part_offset[b + 1] = part_offset[b] + block_runs[b];
  }
  const std::size_t per_head = part_offset[blocks];
  const std::size_t slots = parallel_threads();
  const std::size_t acc_len = std::min(g.queries, kQueryBlock) + g.keys - 1;
  check_allocation(op, saturating_add(saturating_mul(saturating_mul(g.heads, per_head), 8),
                                      saturating_mul(saturating_mul(slots, acc_len), 8)));
  std::vector<double> parts(g.heads * per_head);
  std::vector<double> scratch(slots * acc_len);

  const detail::AddWidenedFn add = detail::add_widened();
  parallel_for_slots(g.heads * blocks, 1, streaming_work(dbias.size() * sizeof(float)), slots,
                     [&](std::size_t begin, std::size_t end, std::size_t slot) {
                       double* acc = scratch.data() + slot * acc_len;
                       for (std::size_t t = begin; t < end; ++t) {
                         const std::size_t h = t / blocks, b = t % blocks;
                         const std::size_t i0 = b * kQueryBlock,
                                           i1 = std::min(g.queries, i0 + kQueryBlock);
                         const std::size_t len = (i1 - i0) + g.keys - 1, k0 = g.queries - i1;
                         std::fill(acc, acc + len, 0.0);
                         // Each diagonal's sum over the block's rows, in row order.
                         for (std::size_t i = i0; i < i1; ++i) {
                           add(acc + (i1 - 1 - i), dbias.row(h * g.queries + i).data(), g.keys);
                         }
                         // Each run's sum over its diagonals in the block, ascending.
                         double* part = parts.data() + h * per_head + part_offset[b];
                         for (std::size_t r = 0; r < block_runs[b]; ++r) {
                           const std::size_t run = first_run[b] + r;
                           const std::size_t from = std::max(diag.runs[run].begin, k0);
                           const std::size_t to = std::min(diag.end(run), k0 + len);
                           double sum = 0.0;
                           for (std::size_t k = from; k < to; ++k) sum += acc[k - k0];
                           part[r] = sum;
                         }
                       }
                     });

  // Each bucket's total over the blocks that reach it, in block order; one rounding, one add.
  for (std::size_t h = 0; h < g.heads; ++h) {
    for (std::size_t run = 0; run < runs; ++run) {
      double total = 0.0;
      for (std::size_t b = 0; b < blocks; ++b) {
        if (run >= first_run[b] && run < first_run[b] + block_runs[b]) {
          total += parts[h * per_head + part_offset[b] + (run - first_run[b])];
        }
      }
      dtable(diag.runs[run].bucket, h) += static_cast<float>(total);
    }
  }
}

}  // namespace posemb
