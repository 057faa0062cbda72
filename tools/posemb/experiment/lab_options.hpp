// tools/posemb/lab_options.hpp: the model, task and optimizer flags shared by `posemb train` and
// the lab commands, built from the lab's limits (lab/config.hpp), and the mapping of the lab's
// config errors to usage errors naming flags.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>

#include "cli.hpp"
#include "lab/config.hpp"
#include "lab/train/run.hpp"

namespace posemb::cli {

// The lab's run choices (lab::RunChoices) as flags, and the thread count.
struct LabFlags : lab::RunChoices {
  int threads = 0;  // 0: OpenMP's default
};

// Adds the flags to cmd (all optional, with defaults and ranges shown in --help).
void add_lab_flags(CLI::App* cmd, LabFlags& f);
// lab::complete_run of the parsed flags; throws UsageError naming the flags of contradicting or
// out-of-range values.
lab::RunConfig finish_lab_flags(const LabFlags& f);

// Config field ("eval.max_len") -> the flag that sets it in one command ("--eval-max").
using FlagNames = std::map<std::string, std::string>;
// A UsageError with e's message and the flags that set its fields (those in `extra`, then the
// lab flags of add_lab_flags).
[[nodiscard]] UsageError usage_error(const lab::ConfigError& e, const FlagNames& extra = {});

// The config field a lab flag of add_lab_flags sets ("--train-len" -> "task.train_len"); "" for
// a flag that sets none (--threads).
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

// Makes the output directory `dir` of `command` (before its long work) and checks that each of
// `files` in it is missing or a regular file, which is all posemb's writer replaces (it checks
// again when writing). Throws std::runtime_error naming the path otherwise.
std::filesystem::path prepare_output_dir(const std::string& dir,
                                         std::initializer_list<const char*> files,
                                         const char* command);

// --rope-scaling METHOD and --rope-factor F (`posemb eval`, `posemb train --init-from`); `when`
// ends the help text (which scaling applies when the flag is absent).
struct RopeScalingFlags {
  std::string method;
  double factor = 1.0;
  CLI::Option* method_opt = nullptr;
  CLI::Option* factor_opt = nullptr;
};
void add_rope_scaling_flags(CLI::App* cmd, RopeScalingFlags& f, const std::string& when);
// "none, linear, ntk, dynamic, yarn": the RoPE scaling methods, for --help.
std::string rope_scaling_method_names();
// The scaling the flags ask for (L0 is set from the checkpoint by the lab), or nullopt when
// --rope-scaling is absent. Throws UsageError for a factor without a method, a method other
// than none without a factor, or a factor with none.
std::optional<lab::RopeScalingConfig> rope_scaling_request(const RopeScalingFlags& f);

// Sets the OpenMP thread count (0: leave the default).
void set_threads(int threads);

// The file name `posemb train` writes its checkpoint under, in its --out directory.
inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";

// The check of a flag that names a checkpoint (--checkpoint, --resume, --init-from): an existing
// file, or a directory holding kCheckpointFile (a `posemb train --out` directory), which the
// value then becomes.
CLI::Validator checkpoint_path();

}  // namespace posemb::cli
