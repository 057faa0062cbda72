// A checkpoint evaluated by length (lab/experiment/eval_run.hpp).
#include "lab/experiment/eval_run.hpp"

#include "lab/tasks/registry.hpp"
#include "lab/train/checkpoint.hpp"

namespace posemb::lab {

EvalSession open_eval(const EvalRequest& request) {
  request.eval.validate();
  RunConfig run;
  Model model = load_model(request.checkpoint, &run, request.table, request.rope_scaling);
  if (!request.corpus.empty()) {
    run.task.corpus = request.corpus;
    validate_task(run.task);  // a corpus for this task, and the one it was trained on
  }
  check_evaluation(model.config(), run.task, request.eval);
  return EvalSession{request, run, std::move(model), {}};
}

std::vector<double> eval_work_by_length(const EvalSession& s) {
  return evaluation_work_by_length(s.model.config(), s.run.task, s.request.eval);
}

std::vector<LengthResult> run_eval(EvalSession& s,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  return evaluate(s.model, s.run.task, s.request.eval, progress);
}

std::vector<std::string> eval_file_names() {
  return {"results.csv", "results.json", "buckets.csv"};
}

std::vector<std::pair<std::string, std::string>> eval_data_files(const EvalSession& s) {
  RunResults rr;
  rr.pe = s.model.config().pe;
  if (s.model.encoding_spec().has_table) rr.max_seq_len = s.model.config().max_seq_len;
  rr.results = s.rows;
  const auto names = eval_file_names();
  std::vector<std::pair<std::string, std::string>> files = {
      {names[0], results_csv({rr})}, {names[1], results_json(s.run.task, {rr})}};
  if (columns_of({rr}).windows) files.emplace_back(names[2], buckets_csv({rr}));
  return files;
}

}  // namespace posemb::lab
