// The posemb command-line tool. main() is the only place that prints errors and picks the exit
// code: 0 success, 1 runtime failure, 2 usage error. Every error is one line on stderr starting
// with "posemb: ", whatever was thrown (std::bad_alloc and non-standard exceptions included),
// with control bytes escaped and its length bounded.
#include <fmt/core.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/version.hpp"

namespace {

// Longest message printed; longer ones are cut ("... (N bytes)").
constexpr std::size_t kMaxMessageBytes = 4096;

// A message as one printable line: line breaks and tabs become spaces; when anything else would
// reach the terminal raw (control bytes, C1 controls, bytes that are not UTF-8, bidi overrides)
// or the text is too long, the whole text is shown as posemb::quote_untrusted shows untrusted
// text (escaped, cut). Messages quote what they take from files already: this is the last guard
// (CLI11 echoes arguments, std::filesystem echoes paths).
std::string printable_line(std::string_view text) {
  std::string s(text);
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  const std::string quoted = posemb::quote_untrusted(s, kMaxMessageBytes);
  // quote_untrusted of text with nothing to escape only adds the quotes and escapes ' and \.
  std::string plain = "'";
  for (const char ch : s) {
    if (ch == '\\' || ch == '\'') plain += '\\';
    plain += ch;
  }
  plain += '\'';
  return quoted == plain ? s : quoted;
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

// Defined below: the nearest flags of an unknown one; what a refused value should have been.
std::optional<std::string> unexpected_message(const CLI::App& app);
std::optional<std::string> value_message(const CLI::App& app, const std::string& what);

// A usage error's text. Without a subcommand CLI11 reports only that one is required; when the
// line held something it did not recognize ("posemb --bogus", "posemb bogus"), name that. In a
// subcommand, an unknown option names the nearest ones and a refused value what was expected.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (app.get_subcommands().empty() && !rest.empty()) {
    const std::string& first = rest.front();
    if (!first.empty() && first[0] == '-') return "unknown option '" + first + "'";
    return "unknown subcommand '" + first + "'";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    if (auto text = unexpected_message(app)) return *text;
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr ||
      dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    if (auto text = value_message(app, e.what())) return *text;
  }
  return e.what();
}

// The subcommand that was being parsed (the app itself when none was).
const CLI::App* deepest_command(const CLI::App& app) {
  const CLI::App* cur = &app;
  for (auto subs = cur->get_subcommands(); !subs.empty(); subs = cur->get_subcommands()) {
    cur = subs.front();
  }
  return cur;
}

// Optimal string alignment distance (edits, and swaps of two neighbours).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// "Seq_Len" -> "seq-len": what the user meant, spelled as posemb spells flags.
std::string normalized_flag(std::string_view name) {
  std::string s(name);
  for (char& ch : s) {
    if (ch == '_') ch = '-';
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return s;
}

std::vector<std::string> flag_words(const std::string& name) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('-', start), name.size());
    if (end > start) words.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

// Names other tools give the length a model is trained at (--train-len here).
bool means_training_length(const std::string& name) {
  for (const char* s : {"seq-len", "seq-length", "sequence-length", "seqlen", "context-len",
                        "context-length", "ctx-len", "block-size", "n-ctx", "len", "length"}) {
    if (name == s) return true;
  }
  return false;
}

// The long options of cmd closest to the unknown one: same words first ("--seq-len" shares
// "len" with "--train-len"), then fewest edits; none when nothing is near.
std::vector<std::string> nearest_options(const CLI::App& cmd, const std::string& unknown) {
  struct Candidate {
    std::string flag;
    std::size_t shared, edits;
    bool synonym;
  };
  if (unknown.empty() || unknown.size() > 64) return {};  // none is near; the table stays small
  const std::string u = normalized_flag(unknown);
  const auto u_words = flag_words(u);
  std::vector<Candidate> near;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      const auto words = flag_words(name);
      std::size_t shared = 0;
      for (const auto& w : u_words) shared += std::count(words.begin(), words.end(), w);
      const std::size_t edits = edit_distance(u, name);
      const bool synonym = name == "train-len" && means_training_length(u);
      // A typo: at most 2 edits between names of 4 letters or more, 1 between shorter ones, and
      // fewer edits than the name has letters ("-x" is near nothing).
      const std::size_t typo = std::min(u.size(), name.size()) >= 4 ? 2 : 1;
      if (synonym || shared > 0 || (edits <= typo && edits < u.size())) {
        near.push_back({"--" + name, shared, edits, synonym});
      }
    }
  }
  std::sort(near.begin(), near.end(), [](const Candidate& a, const Candidate& b) {
    if (a.synonym != b.synonym) return a.synonym;
    if (a.edits <= 2 || b.edits <= 2) return a.edits < b.edits;  // a typo: the closest
    if (a.shared != b.shared) return a.shared > b.shared;
    return a.edits < b.edits;
  });
  std::vector<std::string> out;
  // The same name spelled otherwise (--Train_Len) is the one meant: no second guess.
  const std::size_t want = !near.empty() && near.front().edits == 0 ? 1 : 2;
  for (std::size_t i = 0; i < near.size() && out.size() < want; ++i) out.push_back(near[i].flag);
  return out;
}

// An argument CLI11 did not expect: an unknown option, with the nearest ones of the command, or
// a stray value. "unknown option --seq-len; did you mean --train-len or --max-seq-len?"
std::optional<std::string> unexpected_message(const CLI::App& app) {
  const CLI::App* cmd = deepest_command(app);
  std::vector<std::string> rest = cmd->remaining();
  if (rest.empty()) rest = app.remaining();
  for (const std::string& arg : rest) {
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) continue;
    const std::string name = arg.substr(0, arg.find('='));
    const std::size_t dashes = name.find_first_not_of('-');
    const std::string bare = dashes == std::string::npos ? std::string() : name.substr(dashes);
    std::string text = "unknown option " + name;
    const auto near = nearest_options(*cmd, bare);
    if (!near.empty()) {
      text += "; did you mean " + near[0] + (near.size() > 1 ? " or " + near[1] : "") + "?";
    }
    return text;
  }
  if (!rest.empty()) return "unexpected argument '" + rest.front() + "'";
  return std::nullopt;
}

// A value CLI11 refused, as what the option expected and what it got:
// "--steps: expected an integer in 1..100000000, got 'banana'".
std::optional<std::string> value_message(const CLI::App& app, const std::string& what) {
  static const std::regex range_re(R"(^(-[^:]+): Value (.*) not in range (\S+) to (\S+)$)");
  static const std::regex convert_re(R"(^Could not convert: (\S+) = (.*)$)");
  std::smatch m;
  std::string flag, value, lo, hi;
  if (std::regex_match(what, m, range_re)) {
    flag = m[1], value = m[2], lo = m[3], hi = m[4];
  } else if (std::regex_match(what, m, convert_re)) {
    flag = m[1], value = m[2];
  } else {
    return std::nullopt;
  }
  const CLI::Option* opt = deepest_command(app)->get_option_no_throw(flag);
  if (opt == nullptr) opt = app.get_option_no_throw(flag);
  const std::string type = opt != nullptr ? opt->get_type_name() : "";
  const bool integer = type.find("INT") != std::string::npos;
  std::string text = flag + ": expected " + (integer ? "an integer" : "a number");
  if (!lo.empty()) text += " in " + lo + ".." + hi;
  double v = 0;
  const bool numeric = CLI::detail::lexical_cast(value, v);
  return text + ", got " + (numeric ? value : "'" + value + "'");
}

int usage_error(const std::string& command, std::string_view message) {
  std::fprintf(stderr, "posemb: usage error: %s (see '%s --help')\n",
               printable_line(message).c_str(), command.c_str());
  return posemb::cli::kExitUsage;
}

int runtime_error(std::string_view message) {
  std::fprintf(stderr, "posemb: error: %s\n", printable_line(message).c_str());
  return posemb::cli::kExitFailure;
}

// Signals that end the process (SIGINT, SIGTERM, SIGHUP; and, when their action is the default,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE): remove the temporary files and folders of
// writes in progress (posemb::remove_partial_files is async-signal-safe), then die of the signal
// as if unhandled. SIGPIPE comes when the reader of a pipe stops (`posemb train ... | head -1`):
// the process still ends at its next print, as a pipeline expects, but leaves nothing behind.
void on_terminating_signal(int sig) {
  posemb::remove_partial_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_signal_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler == SIG_IGN) continue;  // nohup, &
    const bool usual = sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
    if (!usual && ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  // A file-size limit (ulimit -f): a write past it fails with EFBIG, which the writer reports
  // and cleans up after, instead of the signal killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
}

// "1.5 GiB": sizes in --help and messages.
std::string human_bytes(std::size_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

// --max-memory: whole bytes, or with a K, M, G or T suffix (powers of 1024; "KiB" ... "TiB" too).
constexpr std::size_t kMinMemoryLimit = std::size_t{1} << 20;
std::optional<std::size_t> parse_size(std::string_view s) {
  std::size_t i = 0, value = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    const auto digit = static_cast<std::size_t>(s[i] - '0');
    if (value > (SIZE_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0 || i > 20) return std::nullopt;
  std::string unit(s.substr(i));
  for (char& ch : unit) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  int shift = -1;
  for (const auto& [name, sh] : {std::pair{"", 0},
                                 {"K", 10},
                                 {"M", 20},
                                 {"G", 30},
                                 {"T", 40},
                                 {"KIB", 10},
                                 {"MIB", 20},
                                 {"GIB", 30},
                                 {"TIB", 40}}) {
    if (unit == name) shift = sh;
  }
  if (shift < 0 || value > (SIZE_MAX >> shift)) return std::nullopt;
  return value << shift;
}

// The budget when --max-memory is not given: posemb's default (3/4 of physical memory), or
// half of an address-space limit (ulimit -v) when that is lower, so that a limited process
// hears "over the memory budget" rather than running out of address space.
std::size_t default_budget() {
  std::size_t budget = posemb::default_memory_limit();
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    budget = std::min<std::size_t>(budget, std::max<std::size_t>(rl.rlim_cur / 2, kMinMemoryLimit));
  }
  return budget;
}

void add_memory_option(CLI::App* app, const std::string& default_text) {
  app->add_option_function<std::string>(
         "--max-memory",
         [](const std::string& text) {
           const auto bytes = parse_size(text);
           if (!bytes || *bytes < kMinMemoryLimit) {
             throw CLI::ValidationError(
                 "--max-memory", posemb::quote_untrusted(text, 64) +
                                     " is not a size of at least 1M (bytes, or a number with K, "
                                     "M, G or T: powers of 1024)");
           }
           posemb::set_memory_limit(*bytes);
         },
         "Memory budget: larger allocations are refused with a message saying what they need "
         "(bytes, or with K, M, G, T; default: 3/4 of physical memory, or half of ulimit -v if "
         "lower: " +
             default_text + " here)")
      ->type_name("SIZE")
      ->trigger_on_parse();
}

// Output that could not be written (a full disk, a closed descriptor) is a failure too: the
// exit code of a command that succeeded otherwise, after flushing the standard output.
int finish_output(int code) {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout.good()) {
    return runtime_error(std::string("writing the standard output failed: ") +
                         std::strerror(errno != 0 ? errno : EIO));
  }
  return code;
}

int run(int argc, char** argv) {
  posemb::set_memory_limit(default_budget());
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
  posemb::cli::register_rope_command(app);
  posemb::cli::register_make_checkpoint_command(app);
  // --max-memory is global: before the subcommand or among its flags.
  const std::string default_text = human_bytes(posemb::memory_limit());
  add_memory_option(&app, default_text);
  for (CLI::App* sub : app.get_subcommands({})) add_memory_option(sub, default_text);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::ParseError& e) {
    return usage_error(command_path(app), usage_message(app, e));
  } catch (const posemb::cli::UsageError& e) {
    return usage_error(command_path(app), e.what());
  } catch (const posemb::cli::ReportedByRankZero&) {
    return posemb::cli::kExitFailure;  // an MPI job's failure, reported once, by rank 0
  } catch (const posemb::MemoryLimitExceeded& e) {
    return runtime_error(std::string(e.what()) + " (set the budget with --max-memory)");
  } catch (const std::bad_alloc&) {
    return runtime_error(
        "out of memory (std::bad_alloc): the system refused an allocation within "
        "the memory budget of " +
        human_bytes(posemb::memory_limit()) +
        "; free memory, raise ulimit -v, or lower --max-memory so that posemb "
        "refuses such work up front");
  }
  return finish_output(posemb::cli::kExitOk);
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
      return posemb::cli::kExitFailure;
    }
  };
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    return report([] { return runtime_error("out of memory (std::bad_alloc)"); });
  } catch (const std::exception& e) {
    return report([&] { return runtime_error(e.what()); });
  } catch (...) {
    return report(
        [] { return runtime_error("an unknown exception (not a std::exception) was thrown"); });
  }
}
