// Evaluation by length (lab/eval/evaluate.hpp): the lengths, their batches, the checks and
// estimates; each length scored by its scorer (lab/eval/scorers.hpp).
#include "lab/eval/evaluate.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lab/encodings/registry.hpp"
#include "lab/eval/scorers.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {

namespace {

// The rows of the learned table (SIZE_MAX for an encoding computed at any position).
std::size_t table_rows(const Model& model) {
  const LearnedPositionalEmbedding* t = model.encoding().learned_table();
  return t != nullptr ? t->max_seq_len() : static_cast<std::size_t>(-1);
}

// The scoring of cfg for task.
Scoring scoring_of(const EvalConfig& cfg, const TaskSpec& task) {
  return cfg.scoring.value_or(task.scoring);
}

// The memory of one length's evaluation: its batch and its scorer's.
std::size_t length_bytes(const ModelConfig& mc, const TaskSpec& task, const EvalConfig& cfg,
                         std::size_t n) {
  const std::size_t len = task.tokens(n);
  if (task.windows != nullptr) return window_bytes(mc, len);
  const std::size_t batch =
      saturating_mul(saturating_mul(cfg.samples, len), sizeof(TokenId) + sizeof(std::int64_t) + 4);
  return saturating_add(batch, scorer_for(scoring_of(cfg, task)).bytes(mc, cfg.samples, len));
}

// The stride of a windows task's sliding figure at windows of len tokens: the evaluation's, or
// half the window, at most len.
std::size_t sliding_stride(const EvalConfig& cfg, std::size_t len) {
  return std::min(len, cfg.stride != 0 ? cfg.stride : std::max<std::size_t>(1, len / 2));
}

// A windows task's length: Press et al.'s non-overlapping windows with the loss by position in
// buckets of the training length, then the sliding windows.
void evaluate_windows(LengthResult& res, Model& model, const TaskConfig& task,
                      const EvalConfig& cfg, PositionMode mode, std::size_t len) {
  const EvalWindows& w = *find_task(task.kind).windows;
  const std::size_t range = model.config().max_seq_len, bucket = train_tokens(task);
  score_windows(res, model, task, w, w.plan(task, len, len, cfg.text_bytes), bucket, mode, range,
                cfg.seed);
  const std::size_t stride = sliding_stride(cfg, len);
  if (stride == len) {  // the same windows: the same figure
    res.sliding = {stride, res.loss, res.counted, res.dropped};
    return;
  }
  score_windows(res, model, task, w, w.plan(task, len, stride, cfg.text_bytes), bucket, mode, range,
                cfg.seed);
}

LengthResult evaluate_length(Model& model, const TaskConfig& task, const EvalConfig& cfg,
                             PositionMode mode, std::size_t n) {
  const auto& mc = model.config();
  const TaskSpec& spec = find_task(task.kind);
  LengthResult res;
  res.length = n;
  res.samples = cfg.samples;
  res.scoring = scoring_of(cfg, spec);
  const std::size_t B = cfg.samples, len = spec.tokens(n);
  // Beyond the table: known from the lengths alone, before any batch or decoder is built.
  if (const std::size_t rows = table_rows(model); len > rows) {
    res.beyond_table = true;
    res.detail =
        SequenceTooLong(
            "evaluate", len, 0, rows,
            mode == PositionMode::randomized ? "randomized positions need distinct table rows" : "")
            .what();
    return res;
  }
  if (spec.windows != nullptr) {
    evaluate_windows(res, model, task, cfg, mode, len);
    return res;
  }
  Batch batch;
  try {
    spec.eval_batch(batch, task, n, cfg.samples, cfg.seed, mode, mc.max_seq_len);
    // The encoding's own check (a learned table: the layer's position check).
    const MatrixView<const std::int64_t> ids = batch.positions.cview();
    model.encoding().check_positions(mode == PositionMode::contiguous
                                         ? PositionSource::contiguous()
                                         : PositionSource::explicit_ids(ids),
                                     B, len);
  } catch (const SequenceTooLong& e) {
    res.beyond_table = true;
    res.detail = e.what();
    return res;
  }
  scorer_for(res.scoring).score(res, model, batch, mode);
  return res;
}

// The longest length of cfg whose rows fit `rows` positions (0: none).
std::size_t longest_within(const TaskSpec& task, const EvalConfig& cfg, std::size_t rows) {
  std::size_t longest = 0;
  for (const std::size_t n : cfg.length_list()) {
    if (task.tokens(n) <= rows) longest = n;
  }
  return longest;
}

// The rows scored at length n: the samples, or a windows task's windows (both figures').
double rows_scored(const TaskConfig& task, const TaskSpec& spec, const EvalConfig& cfg,
                   std::size_t n) {
  if (spec.windows == nullptr) return static_cast<double>(cfg.samples);
  const std::size_t len = spec.tokens(n), stride = sliding_stride(cfg, len);
  const double windows =
      static_cast<double>(spec.windows->plan(task, len, len, cfg.text_bytes).windows);
  return stride == len
             ? windows
             : windows + static_cast<double>(
                             spec.windows->plan(task, len, stride, cfg.text_bytes).windows);
}

// "1..32", "64, 128, 256, 512": the lengths of cfg for messages.
std::string lengths_text(const EvalConfig& cfg) {
  if (cfg.lengths.empty()) return std::to_string(cfg.min_len) + ".." + std::to_string(cfg.max_len);
  std::string s;
  for (const std::size_t n : cfg.lengths) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

// The positions of a model of m (SIZE_MAX for an encoding computed at any position).
std::size_t model_rows(const ModelConfig& m) {
  return find_encoding(m.pe).has_table ? m.max_seq_len : static_cast<std::size_t>(-1);
}

// One instance of length n (0 beyond the table).
double length_work(const ModelConfig& m, const TaskSpec& task, std::size_t n) {
  if (task.tokens(n) > model_rows(m)) return 0.0;
  return Model::forward_work(m, task.tokens(n));
}

// A windows task: the evaluation text holds a window of every length the model can be run at.
void check_windows(const ModelConfig& m, const TaskConfig& task, const EvalConfig& cfg) {
  const TaskSpec& spec = find_task(task.kind);
  if (spec.windows != nullptr && cfg.scoring.value_or(spec.scoring) != Scoring::teacher_forced) {
    throw ConfigError({"eval.scoring"}, "eval config: task " + std::string(spec.name) +
                                            " is scored teacher-forced on the windows of its "
                                            "text, not by " +
                                            scoring_name(*cfg.scoring));
  }
  const std::size_t n = longest_within(spec, cfg, model_rows(m));
  if (spec.windows == nullptr || n == 0) return;
  const std::size_t len = spec.tokens(n);
  const WindowPlan plan = spec.windows->plan(task, len, len, cfg.text_bytes);
  if (plan.windows != 0) return;
  // No whole window: every predictable target of the text is dropped.
  throw ConfigError({"eval.max_len"},
                    "eval config: the evaluation text of task " + std::string(spec.name) + " (" +
                        std::to_string(plan.dropped + 1) + " tokens) holds no window of " +
                        std::to_string(len) + " tokens and its next target (length " +
                        std::to_string(n) + "): evaluate shorter lengths");
}

}  // namespace

std::size_t evaluation_bytes(const ModelConfig& model, const TaskConfig& task,
                             const EvalConfig& cfg, std::size_t concurrent) {
  const TaskSpec& spec = find_task(task.kind);
  const std::size_t n = longest_within(spec, cfg, model_rows(model));
  if (n == 0) return 0;
  // A computed encoding caches every position up to the longest length.
  const std::size_t cache = find_encoding(model.pe).has_table
                                ? 0
                                : Model::bytes(model, spec.tokens(n)) - Model::bytes(model, 0);
  return saturating_add(cache, saturating_mul(std::max<std::size_t>(concurrent, 1),
                                              length_bytes(model, spec, cfg, n)));
}

std::vector<double> evaluation_work_by_length(const ModelConfig& m, const TaskConfig& task,
                                              const EvalConfig& cfg) {
  cfg.validate();
  const TaskSpec& spec = find_task(task.kind);
  const auto lengths = cfg.length_list();
  std::vector<double> work;
  for (auto n = lengths.rbegin(); n != lengths.rend(); ++n) {
    const double w = length_work(m, spec, *n);
    work.push_back(w == 0.0 ? 0.0 : w * rows_scored(task, spec, cfg, *n));
  }
  return work;
}

double evaluation_work(const ModelConfig& m, const TaskConfig& task, const EvalConfig& cfg) {
  const TaskSpec& spec = find_task(task.kind);
  double work = 0.0;
  for (const std::size_t n : cfg.length_list()) {
    const double w = length_work(m, spec, n);
    if (w == 0.0) break;  // this length and every longer one are beyond the table
    work += w * rows_scored(task, spec, cfg, n);
  }
  return work;
}

EvalConfig lengths_up_to(const TaskConfig& task, std::size_t top) {
  const std::size_t L = task.train_len;
  EvalConfig e;
  if (find_task(task.kind).windows == nullptr) {
    e.min_len = 1;
    e.max_len = top != 0 ? top : 3 * L;
    return e;
  }
  if (top == 0) top = 4 * L;
  for (std::size_t n = L; n <= top && n <= limits::eval_len.max; n *= 2) e.lengths.push_back(n);
  if (e.lengths.empty()) e.lengths.push_back(top);
  return e;
}

void check_evaluation(const ModelConfig& model, const TaskConfig& task, const EvalConfig& cfg) {
  cfg.validate();
  const double work = evaluation_work(model, task, cfg);
  if (!limits::eval_work.contains(work)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3g multiply-adds, more than the %.3g an evaluation may take",
                  work, limits::eval_work.max);
    throw ConfigError({"eval.max_len", "eval.samples"},
                      "eval config: lengths " + lengths_text(cfg) + " with " +
                          std::to_string(cfg.samples) + " samples each on this model (" +
                          std::to_string(model.n_layers) + " layers, d_model " +
                          std::to_string(model.d_model) + ") need about " + buf +
                          " (hours of computing): evaluate fewer or shorter lengths");
  }
  check_windows(model, task, cfg);
  const std::size_t bytes = evaluation_bytes(model, task, cfg, 1);
  if (bytes != 0) {
    const std::string longest = std::to_string(cfg.length_list().back());
    check_allocation(find_task(task.kind).windows != nullptr
                         ? "evaluate (windows of up to " + longest + " tokens, " +
                               std::to_string(kEvalChunkRows) + " at a time)"
                         : "evaluate (lengths up to " + longest + " with " +
                               std::to_string(cfg.samples) + " samples each)",
                     bytes);
  }
}

std::vector<LengthResult> evaluate(Model& model, const TaskConfig& task, const EvalConfig& cfg,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  const TaskSpec& spec = validate_task(task);
  const auto& mc = model.config();
  check_evaluation(mc, task, cfg);
  const PositionMode mode = model.encoding_spec().train_positions == PositionMode::randomized
                                ? cfg.randomized_eval
                                : PositionMode::contiguous;
  const std::vector<std::size_t> lengths = cfg.length_list();
  const std::size_t total = lengths.size();
  // Memory, before anything is built: the lengths the table holds, one at a time at least;
  // as many at a time as threads when the budget allows (the results do not depend on it).
  const std::size_t longest = longest_within(spec, cfg, table_rows(model));
  std::size_t concurrent = 1;
  if (longest != 0) {
    const std::size_t one = evaluation_bytes(mc, task, cfg, 1);
    const std::size_t per = length_bytes(mc, spec, cfg, longest);
    const std::size_t room = (memory_limit() - one) / std::max<std::size_t>(per, 1) + 1;
    concurrent = std::clamp<std::size_t>(room, 1, parallel_threads());
    std::size_t top = spec.tokens(longest);
    if (mode == PositionMode::randomized) top = std::max(top, mc.max_seq_len);
    model.reserve_positions(top);
  }
  std::vector<LengthResult> out(total);
  std::vector<std::exception_ptr> errors(total);
  std::size_t done = 0;
  std::mutex progress_mutex;
  // Lengths run in parallel (the longest first; the kernels inside each run on its thread), each
  // with its own batch and decoder: a length's result does not depend on the thread count.
  // Nothing may leave a parallel task by an exception: each is kept and rethrown after.
  parallel_tasks(total, concurrent, [&](std::size_t k) {
    const std::size_t i = total - 1 - k;
    try {
      out[i] = evaluate_length(model, task, cfg, mode, lengths[i]);
      if (progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        progress(++done, total);
      }
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace posemb::lab
