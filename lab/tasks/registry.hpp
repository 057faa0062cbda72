// lab/tasks/registry.hpp: every task of the lab, by name.
//
//   for (const lab::TaskSpec* t : lab::tasks()) ...      // --help order
//   const lab::TaskSpec& t = lab::find_task(cfg.kind);    // ConfigError (task.kind) otherwise
//   lab::validate_task(cfg);                               // the fields, then the task's own
//   lab::task_vocab_size(cfg);                             // the model's vocab_size for it
//
// Adding a task: one file in lab/tasks/ defining an `extern const TaskSpec` (lab/tasks/task.hpp)
// and its name in the registry (lab/tasks/registry.cpp, both lines). Nothing else names a task:
// --task's choices and help, the demo's presets and the run JSON read the registry
// (scripts/check-lab-names.py, CTest `lab_names`, fails on a name spelled elsewhere or a spec
// missing from the registry).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab {

// Every registered task, in the order --help lists them (the first is the default).
std::span<const TaskSpec* const> tasks();
// The task called name; throws ConfigError (field task.kind) listing the names otherwise.
const TaskSpec& find_task(std::string_view name);
// The first registered task's name: --task's default.
const std::string& default_task_name();
// Every registered name, in registry order (for --task's choices).
std::vector<std::string> task_name_list();
// The same, joined with ", ".
std::string task_names();
// "copy (y = x), reverse (y = x reversed), ...", for --help.
std::string task_rules();

// cfg's fields (TaskConfig::check_fields), then its task's own checks; returns the task. Throws
// ConfigError naming the fields.
const TaskSpec& validate_task(const TaskConfig& cfg);
// validate_task, then what the task records of its data filled in (TaskSpec::complete: the
// text task's corpus identity, read from the file). Throws ConfigError.
const TaskSpec& complete_task(TaskConfig& cfg);
// The model's vocabulary for cfg's task (find_task(cfg.kind).vocab_size(cfg)).
std::size_t task_vocab_size(const TaskConfig& cfg);
// The tokens of a row of cfg's task at its training length (the batches' T).
std::size_t train_tokens(const TaskConfig& cfg);
// The longest length n >= 1 whose rows fit `tokens` tokens (task.tokens(n) <= tokens); 0 when
// none does.
std::size_t longest_length_within(const TaskSpec& task, std::size_t tokens);

}  // namespace posemb::lab
