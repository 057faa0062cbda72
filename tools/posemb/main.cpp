// The posemb command-line tool: the subcommands wired to the app, and every way a command ends
// mapped to its exit code (cli.hpp: 0 success, 1 runtime failure, 2 usage error). main() is the
// only place that prints errors: one line on stderr starting with "posemb: ", whatever was thrown
// (std::bad_alloc and non-standard exceptions included), through error_report.hpp.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "cli.hpp"
#include "error_report.hpp"
#include "memory_flag.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/version.hpp"
#include "signals.hpp"
#include "usage_messages.hpp"

namespace {

using namespace posemb::cli;

int run(int argc, char** argv) {
  CLI::App app{
      "posemb: learned positional embeddings for transformers, and the trade-off between a "
      "learned position table and an encoding computed at any position."};
  app.name("posemb");
  app.set_version_flag("--version", std::string("posemb ") + POSEMB_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);
  register_demo_command(app);
  register_bench_command(app);
  register_inspect_command(app);
  register_resize_command(app);
  register_convert_command(app);
  register_train_command(app);
  register_eval_command(app);
  register_sweep_command(app);
  register_rope_command(app);
  register_make_checkpoint_command(app);
  add_memory_flag(app);  // global: before the subcommand or among its flags
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::ParseError& e) {
    return report_usage_error(command_path(app), usage_message(app, e));
  } catch (const UsageError& e) {
    return report_usage_error(command_path(app), e.what());
  } catch (const ReportedByRankZero&) {
    return kExitFailure;  // an MPI job's failure, reported once, by rank 0
  } catch (const posemb::MemoryLimitExceeded& e) {
    return report_runtime_error(std::string(e.what()) +
                                (e.address_space() ? " (raise ulimit -v, or ask for less)"
                                                   : " (set the budget with --max-memory)"));
  } catch (const std::bad_alloc&) {
    return report_runtime_error(
        "out of memory (std::bad_alloc): the system refused an allocation within the memory "
        "budget of " +
        human_bytes(posemb::memory_limit()) +
        "; free memory, raise ulimit -v, or lower --max-memory so that posemb refuses such work "
        "up front");
  }
  return finish_output(kExitOk);
}

}  // namespace

int main(int argc, char** argv) {
  install_signal_handlers();
  // Reporting allocates: if even that fails, a fixed line.
  auto report = [](auto&& print) noexcept {
    try {
      return print();
    } catch (...) {
      std::fputs("posemb: error: out of memory while reporting an error\n", stderr);
      return kExitFailure;
    }
  };
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    return report([] { return report_runtime_error("out of memory (std::bad_alloc)"); });
  } catch (const std::exception& e) {
    return report([&] { return report_runtime_error(e.what()); });
  } catch (...) {
    return report([] {
      return report_runtime_error("an unknown exception (not a std::exception) was thrown");
    });
  }
}
