#include "lab/evaluate.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "lab/kernels.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {

namespace {

LengthResult evaluate_length(Model& model, const TaskConfig& task, const EvalConfig& cfg,
                             PositionMode mode, std::size_t n) {
  const auto& mc = model.config();
  LengthResult res;
  res.length = n;
  res.samples = cfg.samples;
  const std::size_t B = cfg.samples, len = input_len(n);
  Batch batch;
  try {
    make_eval_batch(batch, task, n, cfg.samples, cfg.seed, mode, mc.max_seq_len);
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
  Decoder dec(model, B, len);
  std::vector<TokenId> tok(B), pred(B);
  std::vector<std::int64_t> pos(B);
  std::vector<char> all_right(B, 1);
  std::size_t right = 0;
  for (std::size_t t = 0; t < len; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      tok[b] = t <= n + 1 ? batch.tokens(b, t) : pred[b];
      pos[b] = batch.positions(b, t);
    }
    const auto logits = mode == PositionMode::contiguous ? dec.step(tok) : dec.step(tok, pos);
    if (t < n + 1) continue;
    for (std::size_t b = 0; b < B; ++b) {
      pred[b] = static_cast<TokenId>(argmax(logits.row(b)));
      if (pred[b] == batch.targets(b, t)) {
        ++right;
      } else {
        all_right[b] = 0;
      }
    }
  }
  std::size_t exact = 0;
  for (char c : all_right) exact += c ? 1 : 0;
  res.exact_match = static_cast<double>(exact) / static_cast<double>(B);
  res.token_accuracy = static_cast<double>(right) / static_cast<double>(B * (n + 1));
  return res;
}

}  // namespace

std::vector<LengthResult> evaluate(Model& model, const TaskConfig& task, const EvalConfig& cfg,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  cfg.validate();
  task.validate();
  const auto& mc = model.config();
  const PositionMode mode = model.encoding_spec().train_positions == PositionMode::randomized
                                ? cfg.randomized_eval
                                : PositionMode::contiguous;
  // Lengths run in parallel (one per thread at a time; the kernels inside run serially), each
  // with its own batch and decoder: a length's result does not depend on the thread count.
  const std::size_t total = cfg.max_len - cfg.min_len + 1;
  std::size_t top = input_len(cfg.max_len);
  if (mode == PositionMode::randomized) top = std::max(top, mc.max_seq_len);
  model.reserve_positions(top);
  std::vector<LengthResult> out(total);
  std::vector<std::exception_ptr> errors(total);
  std::size_t done = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t ii = static_cast<std::int64_t>(total) - 1; ii >= 0; --ii) {
    const std::size_t n = cfg.min_len + static_cast<std::size_t>(ii);
    try {
      out[static_cast<std::size_t>(ii)] = evaluate_length(model, task, cfg, mode, n);
    } catch (...) {
      errors[static_cast<std::size_t>(ii)] = std::current_exception();
    }
    if (progress) {
#pragma omp critical(posemb_lab_eval_progress)
      progress(++done, total);
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace posemb::lab
