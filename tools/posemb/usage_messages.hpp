// tools/posemb/usage_messages.hpp: what a usage error says: the command to read the help of, an
// unknown flag's nearest names ("unknown option --seq-len; did you mean --train-len or
// --max-seq-len?"), and what a refused value should have been.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace posemb::cli {

// The command that was being parsed, "posemb" or "posemb train": its --help is the one to read.
std::string command_path(const CLI::App& app);

// A usage error's text. Without a subcommand CLI11 reports only that one is required; when the
// line held something it did not recognize ("posemb --bogus", "posemb bogus"), this names that.
// In a subcommand, an unknown option names the nearest ones and a refused value what was
// expected.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e);

}  // namespace posemb::cli
