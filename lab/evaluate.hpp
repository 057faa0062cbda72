// lab/evaluate.hpp: greedy decoding accuracy by length.
//
// For every n in [min_len, max_len]: `samples` seeded instances of n symbols; the model reads
// the prompt `BOS x1..xn SEP` and then decodes greedily (its own argmax fed back, KV-cached), n + 1
// answer tokens (y1..yn EOS). exact_match: the fraction of instances with every answer token
// right; token_accuracy: the fraction of answer tokens right (position by position, after the
// model's own earlier outputs). When a length needs a position the learned table does not have,
// the library's SequenceTooLong is caught and the length is reported as beyond_table.
//
//   lab::EvalConfig ec;  ec.min_len = 1;  ec.max_len = 48;
//   auto rows = lab::evaluate(model, task, ec);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/model.hpp"
#include "lab/task.hpp"

namespace posemb::lab {

struct LengthResult {
  std::size_t length = 0;
  bool beyond_table = false;
  double exact_match = 0.0, token_accuracy = 0.0;
  std::size_t samples = 0;
  std::string detail;  // the SequenceTooLong message for beyond_table
};

// Throws ConfigError for an unusable cfg. progress(done, total) is called after each length
// (may be empty).
std::vector<LengthResult> evaluate(
    Model& model, const TaskConfig& task, const EvalConfig& cfg,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace posemb::lab
