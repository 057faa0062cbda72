// tools/posemb/experiment/lab_options.hpp: what the lab's commands share besides the run flags
// (lab_flags.hpp): the output folder, the RoPE scaling flags, the checkpoint path check, the
// thread count.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab/config.hpp"
#include "lab_flags.hpp"

namespace posemb::cli {

// What a command does when its output folder holds another run (a checkpoint, results: the files
// posemb's train, eval, sweep and demo write, run_files_in).
struct OutputRules {
  // allow: write beside it (eval's results beside the checkpoint they score, train --resume into
  // its own folder); refuse: throw OutputHoldsRun; replace: `--force`.
  enum class OtherRun { allow, refuse, replace } other_run = OtherRun::allow;
  std::string way_out;  // the remedy besides --force, for the refusal ("or --resume DIR to ...")
};

// Refuse another run in the output folder, or replace it when `force`; way_out: the remedy
// besides --force (", or give another --out").
OutputRules other_run_rules(bool force, std::string way_out);
// --force of train, sweep and demo (which then pass other_run_rules(force, ...)).
void add_force_flag(CLI::App* cmd, bool& force);

// The output folder's run, refused: std::runtime_error (exit 1), one line naming the folder,
// what it holds and the way out.
class OutputHoldsRun : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A prepared output folder. With OtherRun::replace it remembers the other run's files (their
// identity); finish() then removes those the new run did not rewrite, so the folder holds the
// new run alone (each file the new run writes replaces its old one atomically, when it writes it).
struct OutputFolder {
  std::filesystem::path dir;
  struct Entry {
    std::filesystem::path path;
    std::uintmax_t device = 0, inode = 0;
  };
  std::vector<Entry> replaced;
  // Call after the last file is written. Best effort: a file that cannot be removed is left.
  void finish() const;
};

// The names in dir of files and folders a lab run writes (checkpoint.safetensors, results.csv,
// summary.md, checkpoints/, the charts, ...), in the order of a directory listing sorted by name.
std::vector<std::string> run_files_in(const std::filesystem::path& dir);

// Makes the output directory `dir` of `command` (before its long work) and checks that each of
// `files` in it is missing or a regular file, which is all posemb's writer replaces (it checks
// again when writing), and what `rules` ask of another run in it. Throws std::runtime_error
// naming the path otherwise (OutputHoldsRun for a run refused), and UsageError when one is a file
// the command has read under posemb::protect_read_files (any name: a hard or symbolic link, --out
// the --init-from folder).
OutputFolder prepare_output_dir(const std::string& dir, const std::vector<std::string>& files,
                                const char* command, const OutputRules& rules = {});

// before + "10 buckets, max distance 10" + after for a model with relative-position buckets
// (what `train` and `eval` print about the model), "" for any other.
std::string buckets_text(const lab::ModelConfig& m, const char* before, const char* after);

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

// "1:3,7" -> 1, 2, 3, 7: comma-separated whole numbers and ranges A:B (A <= B, fewer than
// max_span numbers in one range), each at most max. Throws UsageError naming `flag` and showing
// `example` otherwise. (--seeds of `posemb sweep`, --lengths of `posemb eval`.)
std::vector<std::uint64_t> parse_number_list(const std::string& text, const std::string& flag,
                                             std::uint64_t max, std::uint64_t max_span,
                                             const std::string& example);

// Sets the OpenMP thread count (0: leave the default).
void set_threads(int threads);

// The file name `posemb train` writes its checkpoint under, in its --out directory.
inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";

// The check of a flag that names a checkpoint (--checkpoint, --resume, --init-from): an existing
// file, or a directory holding kCheckpointFile (a `posemb train --out` directory), which the
// value then becomes.
CLI::Validator checkpoint_path();

}  // namespace posemb::cli
