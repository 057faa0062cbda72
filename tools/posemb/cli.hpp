// tools/posemb/cli.hpp: what the posemb subcommands share. Each subcommand lives in its own
// cmd_*.cpp and registers itself on the app with a register_*_command function; only main()
// prints errors and chooses exit codes.
#pragma once

#include <sys/stat.h>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"

namespace posemb::cli {

// Exit codes of the posemb tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a runtime failure: bad file, sequence too long, ...
inline constexpr int kExitUsage = 2;    // a usage error: unknown flag, bad value, missing arg

// Thrown by a subcommand for a usage error that CLI11's own validators cannot see (two flags
// that contradict each other, say). main() reports it and exits with kExitUsage.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Refuses (UsageError) an output that is the input file named on the command line, under any
// name (the same device and inode: a symbolic or hard link, ./x, ../dir/x), before the input is
// read: `convert T T` is refused as such even when T is not a tensor file. A folder input is
// left to refuse_output_over_input below and to the folder writer.
inline void refuse_output_is_named_input(const std::string& input, const std::string& output,
                                         const std::string& command) {
  struct stat in {
  }, out{};
  if (output.empty() || ::stat(input.c_str(), &in) != 0 || ::stat(output.c_str(), &out) != 0 ||
      S_ISDIR(in.st_mode)) {
    return;
  }
  if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
    throw UsageError(command + ": the output " + quote_untrusted(output) + " is the input file " +
                     quote_untrusted(input) +
                     "; write to another file (posemb never replaces what it reads)");
  }
}

// Refuses (UsageError) an output that is a file the command has read, under any name (the same
// device and inode: a symbolic or hard link, ./x, ../dir/x), whichever file it was: the table,
// a shard or the index of a checkpoint folder, its config.json, any file of the folder. `inspect
// DIR --plot DIR/model.safetensors.index.json` replaced the index with a PNG. Call it after the
// command has read its inputs and before it works; the commands that read files switch the
// record on first (read_files_protected). A missing output is fine.
inline void refuse_output_over_input(const std::string& output, const std::string& command) {
  if (output.empty()) return;
  try {
    refuse_overwriting_read_files(output, command);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// refuse_output_over_input for an output that must be one file (convert, resize to a table,
// inspect --plot, rope --set): a path naming a folder (or a link to one) is left to the writer,
// which refuses it as not a regular file, instead of searching the folder for files read (a link
// to /tmp would be refused for holding an input that lives somewhere under /tmp).
inline void refuse_file_output_over_input(const std::string& output, const std::string& command) {
  struct stat st {};
  if (output.find('\0') == std::string::npos && ::stat(output.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    return;
  }
  refuse_output_over_input(output, command);
}

// The callback of a command that reads files and writes others: every file it reads is
// recorded, and no writer replaces one of them (posemb::protect_read_files).
template <class F>
auto read_files_protected(F run) {
  return [run] {
    protect_read_files(true);
    run();
  };
}

// A whole number in decimal digits, at most max: CLI11 takes "-1" for an unsigned option as
// 2^64 - 1, "" as 0, and an overflowing number as its largest value.
inline CLI::Validator whole_number(std::uint64_t max = UINT64_MAX) {
  return CLI::Validator(
      [max](std::string& in) -> std::string {
        std::uint64_t v = 0;
        bool ok = !in.empty() && in.size() <= 20;
        for (const char ch : in) {
          if (!ok || ch < '0' || ch > '9' ||
              v > (max - static_cast<std::uint64_t>(ch - '0')) / 10) {
            ok = false;
            break;
          }
          v = v * 10 + static_cast<std::uint64_t>(ch - '0');
        }
        return ok ? std::string()
                  : "'" + in + "' is not a whole number in [0, " + std::to_string(max) + "]";
      },
      "UINT");
}

// Refuses (UsageError) a command's work past its limit before any of it is done, in one line:
// "COMMAND: WHAT need about N UNIT, more than the LIMIT COMMAND takes on (ABOUT): HINT". Every
// command whose work grows with its inputs or flags bounds it this way (rope --precision,
// inspect), as eval bounds an evaluation.
inline void refuse_work_over(std::string_view command, std::string_view what, double work,
                             double limit, std::string_view unit, std::string_view about,
                             std::string_view hint) {
  if (work <= limit) return;  // NaN is not <= limit: refused
  throw UsageError(
      fmt::format("{}: {} need about {:.3g} {}, more than the {:.3g} {} takes on ({}): {}", command,
                  what, work, unit, limit, command, about, hint));
}

// A text value that is not empty: a file, an output or a name given as "" on purpose is a usage
// error (`convert --name ""` named the tensor position_embeddings, the name used when none is
// given; `-o ""` failed only when writing).
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        return in.empty() ? "an empty value (give a name, or leave the flag out)" : "";
      },
      "TEXT");
}

// A positive finite number (CLI::PositiveNumber lets NaN and infinity through).
inline CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !std::isfinite(v) || !(v > 0)) {
          return "'" + in + "' is not a positive finite number";
        }
        return {};
      },
      "POSITIVE");
}
// Thrown on the ranks of an MPI job other than rank 0 when rank 0 reports the failure (every
// rank knows of it): main() exits with kExitFailure without a message of its own.
class ReportedByRankZero : public std::runtime_error {
 public:
  ReportedByRankZero() : std::runtime_error("reported by rank 0") {}
};

void register_demo_command(CLI::App& app);
void register_bench_command(CLI::App& app);
void register_inspect_command(CLI::App& app);
void register_resize_command(CLI::App& app);
void register_convert_command(CLI::App& app);
void register_train_command(CLI::App& app);
void register_eval_command(CLI::App& app);
void register_sweep_command(CLI::App& app);
void register_rope_command(CLI::App& app);
void register_make_checkpoint_command(CLI::App& app);

}  // namespace posemb::cli
