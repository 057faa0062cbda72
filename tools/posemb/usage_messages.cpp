// What a usage error says (tools/posemb/usage_messages.hpp).
#include "usage_messages.hpp"

#include <algorithm>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace posemb::cli {
namespace {

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

}  // namespace

std::string command_path(const CLI::App& app) {
  std::string path = "posemb";
  const CLI::App* cur = &app;
  for (auto subs = cur->get_subcommands(); !subs.empty(); subs = cur->get_subcommands()) {
    cur = subs.front();
    path += " " + cur->get_name();
  }
  return path;
}

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

}  // namespace posemb::cli
