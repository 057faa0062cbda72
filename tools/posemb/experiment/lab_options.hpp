// tools/posemb/experiment/lab_options.hpp: what the lab's commands share besides the run flags
// (lab_flags.hpp): the output folder, the RoPE scaling flags, the checkpoint path check, the
// thread count.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab/config.hpp"
#include "lab_flags.hpp"

namespace posemb::cli {

// Makes the output directory `dir` of `command` (before its long work) and checks that each of
// `files` in it is missing or a regular file, which is all posemb's writer replaces (it checks
// again when writing). Throws std::runtime_error naming the path otherwise, and UsageError when
// one is a file the command has read under posemb::protect_read_files (any name: a hard or
// symbolic link, --out the --init-from folder).
std::filesystem::path prepare_output_dir(const std::string& dir,
                                         const std::vector<std::string>& files,
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
