// The demo's data files (lab/experiment/demo_files.hpp).
#include "lab/experiment/demo_files.hpp"

#include "lab/report/lm_results.hpp"
#include "lab/report/results.hpp"
#include "lab/report/summary.hpp"
#include "lab/tasks/registry.hpp"

namespace posemb::lab {
namespace {

constexpr const char* kRopeCsv = "rope_extension.csv";
constexpr const char* kRopeJson = "rope_extension.json";

// The text demo's files (lab/experiment/lm_demo.hpp), in lm_data_files' order.
const std::vector<std::string> kLmFiles = {"lm_results.csv", "lm_results.json", "lm_extension.csv",
                                           "lm_extension.json", "summary.md"};

std::vector<std::pair<std::string, std::string>> lm_data_files(const DemoOutcome& out) {
  const auto& rep = out.report;
  const std::vector<std::string> data = {
      results_csv(rep.runs), results_json(rep.task, rep.runs),
      lm_extension_csv(rep.extension, rep.rope_extension),
      lm_extension_json(out.plan.train_len, rep.extension, rep.rope_extension),
      lm_summary_markdown(rep)};
  std::vector<std::pair<std::string, std::string>> files;
  for (std::size_t i = 0; i < kLmFiles.size(); ++i) files.emplace_back(kLmFiles[i], data[i]);
  return files;
}

}  // namespace

std::vector<std::string> demo_file_names(const DemoPlan& plan) {
  if (plan.language) return kLmFiles;
  std::vector<std::string> names = {"results.csv", "results.json", "extension.csv",
                                    "extension.json"};
  if (!plan.rotary.empty()) {
    names.emplace_back(kRopeCsv);
    names.emplace_back(kRopeJson);
  }
  names.emplace_back("summary.md");
  return names;
}

std::vector<std::pair<std::string, std::string>> demo_data_files(const DemoOutcome& out) {
  if (out.plan.language) return lm_data_files(out);
  const DemoPlan& plan = out.plan;
  const std::size_t L = plan.train_len, L2 = 2 * L;
  const TaskSpec& task = find_task(plan.options.task);
  const auto& rep = out.report;
  // In demo_file_names(plan)'s order (the rope files when a rotary encoding ran).
  const auto names = demo_file_names(plan);
  TaskConfig run_task = plan.run(plan.encodings.front(), plan.options.seed).task;
  complete_task(run_task);  // a corpus named, for results.json
  std::vector<std::string> data = {results_csv(rep.runs), results_json(run_task, rep.runs),
                                   extension_csv(rep.extension),
                                   extension_json(L, L2, task.tokens(L2), rep.extension)};
  if (!plan.rotary.empty()) {
    data.push_back(extension_csv(rep.rope_extension));
    data.push_back(
        rope_extension_json(L, L2, plan.rope_factor, task.tokens(L), rep.rope_extension));
  }
  data.push_back(summary_markdown(rep));
  std::vector<std::pair<std::string, std::string>> files;
  for (std::size_t i = 0; i < names.size(); ++i) files.emplace_back(names[i], std::move(data[i]));
  return files;
}

}  // namespace posemb::lab
