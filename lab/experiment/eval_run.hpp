// lab/experiment/eval_run.hpp: a checkpoint evaluated by length, end to end (`posemb eval`): the
// CLI maps its flags to an EvalRequest, opens it (everything checked before the work), runs it
// and writes the files it returns.
//
//   lab::EvalRequest req;
//   req.checkpoint = "out/checkpoint.safetensors";
//   req.eval.max_len = 24;
//   lab::EvalSession s = lab::open_eval(req);     // the model loaded, the evaluation checked
//   s.rows = lab::run_eval(s, on_progress);       // every length, scored
//   for (const auto& [name, bytes] : lab::eval_data_files(s)) ...   // results.csv, results.json
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lab/config.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/model/model.hpp"
#include "lab/report/results.hpp"

namespace posemb::lab {

// What to evaluate and how (the flags of `posemb eval`).
struct EvalRequest {
  std::string checkpoint;  // a lab checkpoint (lab/train/checkpoint.hpp)
  std::string table;       // a position table replacing its learned table ("": the checkpoint's)
  // A RoPE scaling (method and factor; L0 the checkpoint's trained length) replacing the
  // checkpoint's own; unset: its own.
  std::optional<RopeScalingConfig> rope_scaling;
  EvalConfig eval;  // the lengths, samples, seed, positions and scoring
  // A text checkpoint's corpus file when it is not where the checkpoint read it ("": the path it
  // records); its identity must be the recorded one (a ConfigError naming both otherwise).
  std::string corpus;
};

// An evaluation ready to run.
struct EvalSession {
  EvalRequest request;
  RunConfig run;  // the checkpoint's settings (the table's rows, the scaling asked for)
  Model model;
  std::vector<LengthResult> rows;  // run_eval's
  const ModelConfig& model_config() const { return model.config(); }
};

// The checkpoint's model loaded (lab::load_model) and the evaluation checked
// (lab::check_evaluation: work and memory), before anything runs. Throws ConfigError naming the
// fields of an unusable evaluation (eval.*) or scaling (model.rope_scaling, model.rope_factor), and
// the errors of reading the checkpoint and the table.
EvalSession open_eval(const EvalRequest& request);

// The work of each length in run_eval's order (lab::evaluation_work_by_length), for a progress
// bar.
std::vector<double> eval_work_by_length(const EvalSession& s);

// Every length of the request, scored (lab::evaluate); progress(done, total) after each.
std::vector<LengthResult> run_eval(EvalSession& s,
                                   const std::function<void(std::size_t, std::size_t)>& progress);

// The files an evaluation may write, in order: results.csv and results.json (lab::results_csv,
// results_json: the demo's and the sweep's writer), and for a task scored on the windows of a
// text buckets.csv (lab::buckets_csv: the loss by position inside the windows); eval_data_files
// returns those it writes.
std::vector<std::string> eval_file_names();
std::vector<std::pair<std::string, std::string>> eval_data_files(const EvalSession& s);

}  // namespace posemb::lab
