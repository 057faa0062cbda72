// How the tool reports the end of a command (tools/posemb/error_report.hpp).
#include "error_report.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli.hpp"
#include "posemb/errors.hpp"

namespace posemb::cli {
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

}  // namespace

int report_usage_error(const std::string& command, std::string_view message) {
  std::fprintf(stderr, "posemb: usage error: %s (see '%s --help')\n",
               printable_line(message).c_str(), command.c_str());
  return kExitUsage;
}

int report_runtime_error(std::string_view message) {
  std::fprintf(stderr, "posemb: error: %s\n", printable_line(message).c_str());
  return kExitFailure;
}

int finish_output(int code) {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout.good()) {
    return report_runtime_error(std::string("writing the standard output failed: ") +
                                std::strerror(errno != 0 ? errno : EIO));
  }
  return code;
}

}  // namespace posemb::cli
