// lab/results.hpp: the experiment's outputs (the CLI writes them with
// posemb::write_file_atomically).
//
//   results.csv / results.json  accuracy by length for every run (results.json's schema is read
//                               by others: {"task", "train_len", "runs": [{"pe", "max_seq_len",
//                               "train_seconds", "results": [{"length", "status", "exact_match",
//                               "token_accuracy"}]}]})
// (The demo's plots are drawn by the CLI with the renderer in viz/.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lab/evaluate.hpp"

namespace posemb::lab {

struct RunResults {
  std::string pe;
  std::optional<std::size_t> max_seq_len;  // rows of the learned table, if any
  double train_seconds = 0.0;
  std::vector<LengthResult> results;
};

std::string results_csv(const std::vector<RunResults>& runs);
std::string results_json(const std::string& task, std::size_t train_len,
                         const std::vector<RunResults>& runs);
}  // namespace posemb::lab
