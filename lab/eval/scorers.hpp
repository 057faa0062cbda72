// lab/eval/scorers.hpp: the scorers evaluate() runs on each length's batch (internal to the eval
// room; users call lab/eval/evaluate.hpp). One per lab::Scoring, each in its own file:
//
//   greedy.cpp          the model decodes from the first counted target on, from its own outputs
//                       (KV-cached, lab::Decoder); exact match and token accuracy
//   teacher_forced.cpp  every input given, one forward pass per chunk of rows; the counted
//                       targets' mean negative log-likelihood
//
// A new scorer: its file, a Scoring and its columns (lab/config.hpp, length_result.cpp), and its
// entry in scorer_for (scorers.cpp).
#pragma once

#include <cstddef>

#include "lab/config.hpp"
#include "lab/eval/length_result.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab {

struct Scorer {
  // The bytes of scoring `rows` rows of `tokens` tokens on a model of cfg (saturating).
  std::size_t (*bytes)(const ModelConfig& cfg, std::size_t rows, std::size_t tokens);
  // Scores batch (its rows full length, positions in mode) into out's scoring fields; throws
  // std::runtime_error naming out.length when the model's outputs are infinite or NaN. Reads the
  // model only (lengths run concurrently); its positions must be reserved.
  void (*score)(LengthResult& out, Model& model, const Batch& batch, PositionMode mode);
};

const Scorer& scorer_for(Scoring s);

// The two scorers (greedy.cpp, teacher_forced.cpp).
std::size_t greedy_bytes(const ModelConfig& cfg, std::size_t rows, std::size_t tokens);
void score_greedy(LengthResult& out, Model& model, const Batch& batch, PositionMode mode);
std::size_t teacher_forced_bytes(const ModelConfig& cfg, std::size_t rows, std::size_t tokens);
void score_teacher_forced(LengthResult& out, Model& model, const Batch& batch, PositionMode mode);

// Rows (a text's windows) per forward pass of the teacher-forced scorer.
inline constexpr std::size_t kEvalChunkRows = 8;

// A task evaluated on the windows of a text (TaskSpec::windows): the teacher-forced scorer over
// every window of plan, made kEvalChunkRows at a time. With plan.stride == plan.tokens (Press et
// al.'s non-overlapping windows) into out's loss, counted, dropped and buckets (of bucket_len
// positions); with a shorter stride into out.sliding. Reads the model only; its positions must be
// reserved. Throws std::runtime_error naming the windows when a loss is infinite or NaN.
std::size_t window_bytes(const ModelConfig& cfg, std::size_t tokens);
void score_windows(LengthResult& out, Model& model, const TaskConfig& task,
                   const EvalWindows& windows, const WindowPlan& plan, std::size_t bucket_len,
                   PositionMode mode, std::size_t range, std::uint64_t seed);

}  // namespace posemb::lab
