// The posemb command-line tool. main() is the only place that prints errors and picks the exit
// code: 0 success, 1 runtime failure, 2 usage error. Errors go to stderr as one line.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/version.hpp"

namespace {

// CLI11 messages can span lines; the tool's errors are one line each.
std::string one_line(std::string s) {
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The command that was being parsed, "posemb" or "posemb train": its --help is the one to read.
std::string command_path(const CLI::App& app) {
  std::string path = "posemb";
  const CLI::App* cur = &app;
  for (auto subs = cur->get_subcommands(); !subs.empty(); subs = cur->get_subcommands()) {
    cur = subs.front();
    path += " " + cur->get_name();
  }
  return path;
}

// A usage error's text. Without a subcommand CLI11 reports only that one is required; when the
// line held something it did not recognize ("posemb --bogus", "posemb bogus"), name that.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (app.get_subcommands().empty() && !rest.empty()) {
    const std::string& first = rest.front();
    if (!first.empty() && first[0] == '-') return "unknown option '" + first + "'";
    return "unknown subcommand '" + first + "'";
  }
  return one_line(e.what());
}

int usage_error(const CLI::App& app, const std::string& message) {
  fmt::print(stderr, "posemb: usage error: {} (see '{} --help')\n", message, command_path(app));
  return posemb::cli::kExitUsage;
}

// SIGINT, SIGTERM, SIGHUP: remove the temporary files of writes in progress
// (posemb::remove_partial_files is async-signal-safe), then die of the signal as if unhandled.
void on_terminating_signal(int sig) {
  posemb::remove_partial_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_cleanup_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup, &
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  install_cleanup_handlers();
  CLI::App app{
      "posemb: learned positional embeddings for transformers, and the trade-off between a "
      "learned position table and an encoding computed at any position."};
  app.name("posemb");
  app.set_version_flag("--version", std::string("posemb ") + POSEMB_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);

  posemb::cli::register_demo_command(app);
  posemb::cli::register_bench_command(app);
  posemb::cli::register_inspect_command(app);
  posemb::cli::register_resize_command(app);
  posemb::cli::register_convert_command(app);
  posemb::cli::register_train_command(app);
  posemb::cli::register_eval_command(app);
  posemb::cli::register_sweep_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, usage_message(app, e));
  } catch (const posemb::cli::UsageError& e) {
    return usage_error(app, one_line(e.what()));
  } catch (const posemb::cli::ReportedByRankZero&) {
    return posemb::cli::kExitFailure;  // an MPI job's failure, reported once, by rank 0
  } catch (const std::exception& e) {
    fmt::print(stderr, "posemb: error: {}\n", one_line(e.what()));
    return posemb::cli::kExitFailure;
  }
  return posemb::cli::kExitOk;
}
