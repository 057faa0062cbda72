#include "lab_options.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"

namespace posemb::cli {

std::filesystem::path prepare_output_dir(const std::string& dir,
                                         const std::vector<std::string>& files,
                                         const char* command) {
  const std::filesystem::path path(dir);
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path)) {
    throw std::runtime_error(std::string(command) + ": cannot make the output directory " +
                             quote_untrusted(dir) + ": " +
                             (ec ? ec.message() : std::string("it is not a directory")));
  }
  // The folder takes new files (a temporary made and removed at once, as the atomic writes will
  // make theirs): a run that could not write its results fails here, before it works, also when
  // a permission check (access(2)) would pass, as for root on a read-only file system.
  std::string probe = (path / ".posemb-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw std::runtime_error(
        std::string(command) + ": cannot create files in the output directory " +
        quote_untrusted(dir) + ": " + std::strerror(errno) + "; nothing was done");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  for (const std::string& name : files) {
    const auto st = std::filesystem::symlink_status(path / name, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
      throw std::runtime_error(std::string(command) + ": " +
                               quote_untrusted((path / name).string()) +
                               " exists and is not a regular file (posemb replaces only regular "
                               "files); nothing was done");
    }
    // Nor a file the command has read (its --init-from or --checkpoint, its --table): a usage
    // error before any work, when the command records what it reads (read_files_protected).
    refuse_output_over_input((path / name).string(), command);
  }
  return path;
}

void set_threads(int threads) {
  if (threads > 0) set_parallel_threads(static_cast<std::size_t>(threads));
}

}  // namespace posemb::cli

namespace posemb::cli {

std::string rope_scaling_method_names() {
  std::string methods;
  for (const auto& m : lab::rope_scaling_methods()) methods += (methods.empty() ? "" : ", ") + m;
  return methods;
}

void add_rope_scaling_flags(CLI::App* cmd, RopeScalingFlags& f, const std::string& when) {
  f.method_opt = cmd->add_option("--rope-scaling", f.method,
                                 "RoPE past its trained length, for a rope checkpoint: " +
                                     rope_scaling_method_names() +
                                     " (the library's methods, posemb/rope_scaling.hpp; "
                                     "the trained length L0 is the checkpoint's: the tokens of "
                                     "its longest training row). " +
                                     when)
                     ->check(CLI::IsMember(lab::rope_scaling_methods()));
  f.factor_opt = cmd->add_option("--rope-factor", f.factor,
                                 "The scaling's factor s (needed by every method but none)")
                     ->check(within(lab::limits::rope_factor));
}

std::optional<lab::RopeScalingConfig> rope_scaling_request(const RopeScalingFlags& f) {
  const bool method = f.method_opt->count() > 0, factor = f.factor_opt->count() > 0;
  if (factor && !method) throw UsageError("--rope-factor needs --rope-scaling");
  if (!method) return std::nullopt;
  const bool none = f.method == lab::rope_scaling_methods().front();
  if (!none && !factor) {
    throw UsageError("--rope-scaling " + f.method + " needs --rope-factor (e.g. 2)");
  }
  if (none && factor) throw UsageError("--rope-factor is not used with --rope-scaling " + f.method);
  lab::RopeScalingConfig r;
  r.method = f.method;
  r.factor = none ? 1.0 : f.factor;
  return r;
}

CLI::Validator checkpoint_path() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::file_status st = fs::status(in, ec);
        if (fs::is_directory(st)) {
          const fs::path inside = fs::path(in) / kCheckpointFile;
          if (!fs::is_regular_file(inside, ec)) {
            return quote_untrusted(in) + " is a directory without " + kCheckpointFile +
                   " (give a `posemb train --out` directory or a checkpoint file)";
          }
          in = inside.string();
          return {};
        }
        if (!fs::exists(st)) return quote_untrusted(in) + " does not exist";
        return {};
      },
      "CHECKPOINT");
}

}  // namespace posemb::cli
