// The teacher-forced scorer (lab/eval/scorers.hpp): every input given, the model's forward pass
// (the one training uses) over chunks of kChunkRows rows, each counted target's loss summed in
// row and position order (double): loss is the mean negative log-likelihood (nats) of the
// counted targets; bits per token is loss / ln 2 (a text's bits per byte). The same bits for any
// thread count. A text's windows (score_windows) are made and scored chunk by chunk, so the whole
// evaluation text is never one batch.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/eval/scorers.hpp"
#include "posemb/memory.hpp"

namespace posemb::lab {
namespace {

// Rows per forward pass: bounds the activations (B T^2 attention weights a layer) at long lengths.
constexpr std::size_t kChunkRows = kEvalChunkRows;

// What the chunks add up to.
struct Sums {
  double nll = 0.0;
  std::size_t counted = 0;
  std::size_t bucket_len = 0;       // 0: no buckets
  std::vector<LossBucket> buckets;  // positions [0, len), [len, 2 len), ...
};

Sums make_sums(std::size_t T, std::size_t bucket_len) {
  Sums s;
  s.bucket_len = bucket_len;
  for (std::size_t b = 0; bucket_len != 0 && b < T; b += bucket_len) {
    s.buckets.push_back({b, std::min(T, b + bucket_len), 0.0, 0});
  }
  return s;
}

// The forward pass over `rows` of batch (in that order) into sums; `where` names the rows in the
// message of a non-finite loss.
void add_rows(Sums& sums, Model& model, Activations& acts, const Batch& batch,
              std::span<const std::size_t> rows, std::size_t length, const std::string& where) {
  (void)model.forward(acts, batch.tokens, batch.positions, batch.targets, rows, 1);
  const std::size_t T = batch.tokens.cols();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t t = 0; t < T; ++t) {
      if (batch.targets(rows[i], t) < 0) continue;
      const double loss = acts.losses[i * T + t];
      if (!std::isfinite(loss)) {
        throw std::runtime_error("evaluate: the loss is " + std::to_string(loss) + " at length " +
                                 std::to_string(length) + where +
                                 ": the model's parameters (or its rope scaling) overflow "
                                 "float; no loss is reported");
      }
      sums.nll += loss;
      ++sums.counted;
      if (sums.bucket_len != 0) {
        LossBucket& b = sums.buckets[t / sums.bucket_len];
        b.nll += loss;
        ++b.count;
      }
    }
  }
}

double mean(const Sums& s) {
  return s.counted == 0 ? 0.0 : s.nll / static_cast<double>(s.counted);
}

}  // namespace

std::size_t teacher_forced_bytes(const ModelConfig& cfg, std::size_t rows, std::size_t tokens) {
  return Activations::bytes(cfg, std::min(rows, kChunkRows), tokens);
}

void score_teacher_forced(LengthResult& out, Model& model, const Batch& batch, PositionMode) {
  const std::size_t B = batch.tokens.rows(), T = batch.tokens.cols();
  Activations acts(model.config(), std::min(B, kChunkRows), T);
  Sums sums = make_sums(T, 0);
  std::vector<std::size_t> rows;
  for (std::size_t r0 = 0; r0 < B; r0 += kChunkRows) {
    rows.resize(std::min(kChunkRows, B - r0));
    std::iota(rows.begin(), rows.end(), r0);
    add_rows(sums, model, acts, batch, rows, out.length, "");
  }
  out.scoring = Scoring::teacher_forced;
  out.counted = sums.counted;
  out.loss = mean(sums);
}

std::size_t window_bytes(const ModelConfig& cfg, std::size_t tokens) {
  const std::size_t batch = saturating_mul(saturating_mul(kChunkRows, tokens),
                                           sizeof(TokenId) + sizeof(std::int64_t) + 4);
  return saturating_add(teacher_forced_bytes(cfg, kChunkRows, tokens), batch);
}

void score_windows(LengthResult& out, Model& model, const TaskConfig& task,
                   const EvalWindows& windows, const WindowPlan& plan, std::size_t bucket_len,
                   PositionMode mode, std::size_t range, std::uint64_t seed) {
  const std::size_t T = plan.tokens;
  Sums sums = make_sums(T, bucket_len);
  if (plan.windows != 0) {
    Activations acts(model.config(), std::min(plan.windows, kChunkRows), T);
    Batch batch;
    std::vector<std::size_t> rows;
    for (std::size_t first = 0; first < plan.windows; first += kChunkRows) {
      const std::size_t n = std::min(kChunkRows, plan.windows - first);
      windows.fill(batch, task, plan, first, n, mode, range, seed);
      rows.resize(n);
      std::iota(rows.begin(), rows.end(), 0);
      add_rows(sums, model, acts, batch, rows, out.length,
               ", windows " + std::to_string(first) + ".." + std::to_string(first + n - 1) +
                   " of stride " + std::to_string(plan.stride));
    }
  }
  out.scoring = Scoring::teacher_forced;
  if (plan.stride == T) {  // the non-overlapping windows: the length's own figure
    out.samples = plan.windows;
    out.counted = sums.counted;
    out.dropped = plan.dropped;
    out.loss = mean(sums);
    out.buckets = std::move(sums.buckets);
  } else {
    out.sliding = {plan.stride, mean(sums), sums.counted, plan.dropped};
  }
}

}  // namespace posemb::lab
