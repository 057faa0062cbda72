// tools/posemb/experiment/lab_flags.hpp: the lab's run settings as flags (`posemb train`, and the
// sweep's grid), each declared once in one table (lab_flags.cpp): its name, the config field it
// sets, its help and its range (the lab's limits, lab/config.hpp), and how it binds a single
// value or, as an axis of the sweep's grid, a list. The lab's config errors become usage errors
// naming these flags.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <type_traits>

#include "cli.hpp"
#include "lab/config.hpp"
#include "lab/experiment/sweep.hpp"
#include "lab/train/run.hpp"

namespace posemb::cli {

// The lab's run choices (lab::RunChoices) as flags, and the thread count.
struct LabFlags : lab::RunChoices {
  int threads = 0;  // 0: OpenMP's default
};

// Adds every lab flag to cmd (all optional, with defaults and ranges shown in --help). With
// axes (`posemb sweep`), the settings that are axes of the grid take a comma-separated list
// into axes instead of one value, and --seed is left to the sweep's --seeds.
void add_lab_flags(CLI::App* cmd, LabFlags& f, lab::SweepAxes* axes = nullptr);
// --task NAME into task: a registered task (its rules in --help); the one declaration of the
// flag, for the run flags and the demo's.
CLI::Option* add_task_flag(CLI::App* cmd, std::string& task);
// lab::complete_run of the parsed flags; throws UsageError naming the flags of contradicting or
// out-of-range values.
lab::RunConfig finish_lab_flags(const LabFlags& f);

// Config field ("eval.max_len") -> the flag that sets it in one command ("--eval-max").
using FlagNames = std::map<std::string, std::string>;
// A UsageError with e's message and the flags that set its fields (those in `extra`, then the
// lab flags; a field `extra` maps to "" names no flag).
[[nodiscard]] UsageError usage_error(const lab::ConfigError& e, const FlagNames& extra = {});

// The config field a lab flag sets ("--train-len" -> "task.train_len"); "" for a flag that sets
// none (--threads).
std::string field_of_flag(const std::string& flag);

// The flag check for a lab limit: CLI::Range for a closed integer range, otherwise a validator
// with the same test (Limit::contains); --help shows the range either way.
template <class T>
CLI::Validator within(const lab::Limit<T>& lim) {
  if constexpr (std::is_integral_v<T>) {
    if (!lim.min_open && !lim.max_open) return CLI::Range(lim.min, lim.max);
  }
  return CLI::Validator(
      [lim](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v)) return "'" + in + "' is not a number";
        return lim.contains(static_cast<T>(v)) ? std::string()
                                               : "value " + in + " not in " + lim.text();
      },
      "in " + lim.text());
}

}  // namespace posemb::cli
