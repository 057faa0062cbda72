// tools/posemb/error_report.hpp: how the tool reports the end of a command (main() alone calls
// these): every error one line on stderr starting with "posemb: ", with control bytes escaped and
// its length bounded, and the exit code (cli.hpp: 0 success, 1 runtime failure, 2 usage error).
#pragma once

#include <string>
#include <string_view>

namespace posemb::cli {

// "posemb: usage error: MESSAGE (see 'COMMAND --help')"; returns kExitUsage.
int report_usage_error(const std::string& command, std::string_view message);
// "posemb: error: MESSAGE"; returns kExitFailure.
int report_runtime_error(std::string_view message);
// `code`, after flushing the standard output; kExitFailure (reported) when the output could not
// be written (a full disk, a closed descriptor).
int finish_output(int code);

}  // namespace posemb::cli
