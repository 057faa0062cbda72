// lab/eval/evaluate.hpp: a model evaluated on its task by length, each length scored by the
// scoring the evaluation asks for or else the task's own (lab/config.hpp's Scoring):
//
//   greedy          the model reads each row up to its first counted target (a symbol task's
//                   prompt `BOS x1..xn SEP`) and then decodes greedily (its own argmax fed back,
//                   KV-cached); exact_match: the fraction of rows with every counted target right;
//                   token_accuracy: the fraction of counted targets right
//   teacher_forced  every input given; loss: the counted targets' mean negative log-likelihood
//                   (nats), bits_per_token = loss / ln 2
//
// For every n in [min_len, max_len]: `samples` seeded rows of length n (the task's eval_batch).
// When a length needs a position the learned table does not have, the library's
// SequenceTooLong is caught and the length is reported as beyond_table.
//
//   lab::EvalConfig ec;  ec.min_len = 1;  ec.max_len = 48;
//   auto rows = lab::evaluate(model, task, ec);               // the task's scoring
//   ec.scoring = lab::Scoring::teacher_forced;
//   auto losses = lab::evaluate(model, task, ec);             // loss by length
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/eval/length_result.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab {

// The bytes evaluate() needs for a model of these settings (its learned table's rows: model.
// max_seq_len) with `concurrent` lengths at a time: the batch and scorer (a decoder, or a forward
// pass's activations) of the longest length the table holds, and a computed encoding's cache
// (saturating; 0 when no length fits).
std::size_t evaluation_bytes(const ModelConfig& model, const TaskConfig& task,
                             const EvalConfig& cfg, std::size_t concurrent = 1);

// The multiply-adds of evaluate() for a model of these settings: every length the table holds,
// samples at a time, decoded or run forward (an estimate: the products and the attention, the
// same for both scorers).
double evaluation_work(const ModelConfig& model, const TaskConfig& task, const EvalConfig& cfg);
// The same estimate for each length, in the order evaluate() runs them (the longest first): 0
// for a length the table cannot hold (reported beyond_table without being decoded). For a
// progress bar's time left.
std::vector<double> evaluation_work_by_length(const ModelConfig& model, const TaskConfig& task,
                                              const EvalConfig& cfg);

// The lengths a run is evaluated at when only the longest is given (`posemb train --eval-max`,
// the sweep): 1..top (0: 3 train_len), or for a task scored on the windows of a text train_len,
// 2 train_len, 4 train_len, ... up to top (0: 4 train_len; below train_len: top alone). Samples
// and seed at their defaults.
EvalConfig lengths_up_to(const TaskConfig& task, std::size_t top);

// What evaluate() checks before it builds anything: the work within limits::eval_work
// (ConfigError naming eval.max_len and eval.samples) and the memory of one length at a time
// within the memory budget (MemoryLimitExceeded). For a front end to call before training.
void check_evaluation(const ModelConfig& model, const TaskConfig& task, const EvalConfig& cfg);

// Throws ConfigError for an unusable cfg, and std::runtime_error naming the length when the
// logits it decodes from (or the loss) are infinite or NaN (parameters that overflow float:
// nothing is reported from them). Lengths the learned table cannot hold are reported beyond_table
// from the lengths alone (no batch is built for them); before anything else is
// built, the memory of the others is checked against the memory budget (MemoryLimitExceeded:
// evaluation_bytes(..., 1)), and lengths run concurrently, up to one per thread, as far as the
// budget allows. progress(done, total) is called after each length (may be empty).
std::vector<LengthResult> evaluate(
    Model& model, const TaskConfig& task, const EvalConfig& cfg,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace posemb::lab
