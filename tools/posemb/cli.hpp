// tools/posemb/cli.hpp: what the posemb subcommands share. Each subcommand lives in its own
// cmd_*.cpp and registers itself on the app with a register_*_command function; only main()
// prints errors and chooses exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

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

}  // namespace posemb::cli
