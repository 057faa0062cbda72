// lab/report/results_json.hpp: one evaluated length as JSON, for the lab's results writers
// (lab/report/results.cpp, lab/experiment/sweep_files.cpp); nlohmann::json stays out of the lab's
// other headers.
//
//   run["results"].push_back(lab::length_json(l));
//   // {"length": 9, "status": "ok", "exact_match": 0.97, "token_accuracy": 0.99}
//   // teacher-forced: {"length", "status", "loss", "bits_per_token"} (lab::score_columns)
//   // beyond the table: status "beyond_table", the scorer's values null
#pragma once

#include <nlohmann/json.hpp>

#include "lab/eval/length_result.hpp"

namespace posemb::lab {

nlohmann::ordered_json length_json(const LengthResult& l);

}  // namespace posemb::lab
