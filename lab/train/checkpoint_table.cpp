#include "lab/train/checkpoint_table.hpp"

#include <exception>

#include "lab/config.hpp"
#include "lab/tasks/registry.hpp"

namespace posemb::lab {
namespace {

constexpr const char* kRunKey = "posemb.lab.run";

// The run settings in metadata record the table's rows as model.max_seq_len: keep them true.
void fit_run_settings(Metadata& metadata, std::size_t rows) {
  const auto it = metadata.find(kRunKey);
  if (it == metadata.end()) return;
  try {
    RunConfig run = RunConfig::from_json(it->second);
    run.model.max_seq_len = rows;
    it->second = run.to_json();
  } catch (const std::exception&) {
    // Left as they were: reading the checkpoint refuses them with the reason.
  }
}

}  // namespace

bool is_lab_checkpoint(const Metadata& metadata) {
  return metadata.count(kRunKey) != 0;
}

posemb::FileResize resize_checkpoint_table(const TensorFile& checkpoint, const std::string& path,
                                           const posemb::FileResizeRequest& request) {
  posemb::FileResize r = posemb::plan_file_resize(checkpoint, path, request);
  if (r.whole_file) fit_run_settings(r.file.metadata, r.table.values.rows());
  posemb::write_file_resize(r);
  return r;
}

std::optional<TableFit> table_fit(const Metadata& metadata, std::size_t table_rows) {
  const auto it = metadata.find(kRunKey);
  if (it == metadata.end()) return std::nullopt;
  try {
    const TaskSpec& task = find_task(RunConfig::from_json(it->second).task.kind);
    return TableFit{longest_length_within(task, table_rows), std::string(task.length_rule)};
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

}  // namespace posemb::lab
