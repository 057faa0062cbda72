#include "lab_options.hpp"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"

namespace posemb::cli {

std::vector<std::uint64_t> parse_number_list(const std::string& text, const std::string& flag,
                                             std::uint64_t max, std::uint64_t max_span,
                                             const std::string& example) {
  const std::string bad = flag + " " + quote_untrusted(text, 64) +
                          " is not a comma-separated list of whole numbers and ranges A:B (e.g. " +
                          example + ")";
  auto num = [&](const std::string& s) -> std::uint64_t {
    std::uint64_t v = 0;
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) throw UsageError(bad);
    for (const char c : s) {
      const auto d = static_cast<std::uint64_t>(c - '0');
      if (v > (max - d) / 10 || v * 10 + d > max) {
        throw UsageError(flag + " " + quote_untrusted(text, 64) + ": " + s.substr(0, 40) +
                         " is more than " + std::to_string(max) + ", the largest");
      }
      v = v * 10 + d;
    }
    return v;
  };
  std::vector<std::uint64_t> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(num(item));
    } else {
      const std::uint64_t a = num(item.substr(0, colon)), b = num(item.substr(colon + 1));
      if (b < a || b - a >= max_span) {
        throw UsageError(bad + ": a range A:B needs A <= B < A+" + std::to_string(max_span));
      }
      for (std::uint64_t k = 0; k <= b - a; ++k) out.push_back(a + k);  // b may be max
    }
    at = comma + 1;
  }
  return out;
}

namespace {

// A lab run's files in its --out folder: train's checkpoint, the results of eval, sweep and demo,
// demo's data, checkpoints and charts, sweep's charts.
bool is_run_file(const std::string& name) {
  static const char* const kNames[] = {
      kCheckpointFile,  "results.csv",        "results.json",        "summary.md",  "extension.csv",
      "extension.json", "rope_extension.csv", "rope_extension.json", "checkpoints", "buckets.csv"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  const auto ends = [&](std::string_view tail) {
    return name.size() >= tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return (name.rfind("length_generalization", 0) == 0 && ends(".svg")) ||
         (name.rfind("extension", 0) == 0 && ends(".svg")) ||
         (name.rfind("rope_extension", 0) == 0 && ends(".svg")) || ends("_similarity.png");
}

OutputFolder::Entry identity(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {p, 0, 0};
  return {p, static_cast<std::uintmax_t>(st.st_dev), static_cast<std::uintmax_t>(st.st_ino)};
}

}  // namespace

std::vector<std::string> run_files_in(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto st = it->symlink_status(ec);
    const bool kind = name == "checkpoints" ? std::filesystem::is_directory(st)
                                            : std::filesystem::is_regular_file(st);
    if (kind && is_run_file(name)) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

void OutputFolder::finish() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const Entry& e : replaced) {
    const Entry now = identity(e.path);
    if (now.inode != 0 && now.device == e.device && now.inode == e.inode) fs::remove(e.path, ec);
  }
  // The other run's folder of checkpoints, when nothing is left in it.
  if (const fs::path ck = dir / "checkpoints"; fs::is_directory(fs::symlink_status(ck, ec))) {
    if (fs::is_empty(ck, ec) && !ec) fs::remove(ck, ec);
  }
}

OutputFolder prepare_output_dir(const std::string& dir, const std::vector<std::string>& files,
                                const char* command, const OutputRules& rules) {
  namespace fs = std::filesystem;
  const fs::path path(dir);
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) {
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
  OutputFolder out{path, {}};
  if (rules.other_run != OutputRules::OtherRun::allow) {
    const std::vector<std::string> found = run_files_in(path);
    if (!found.empty() && rules.other_run == OutputRules::OtherRun::refuse) {
      std::string names;
      for (std::size_t k = 0; k < found.size() && k < 3; ++k) {
        names += (k ? ", " : "") + found[k] + (found[k] == "checkpoints" ? "/" : "");
      }
      if (found.size() > 3) names += ", ...";
      throw OutputHoldsRun(std::string(command) + ": the output folder " + quote_untrusted(dir) +
                           " holds another run (" + names + "); pass --force to replace it" +
                           rules.way_out + "; nothing was done");
    }
    for (const std::string& name : found) {  // replace: what the other run left, file by file
      const fs::path p = path / name;
      if (fs::is_directory(fs::symlink_status(p, ec))) {
        for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
          if (fs::is_regular_file(it->symlink_status(ec))) out.replaced.push_back(identity(*it));
        }
      } else {
        out.replaced.push_back(identity(p));
      }
    }
  }
  return out;
}

OutputRules other_run_rules(bool force, std::string way_out) {
  OutputRules r;
  r.other_run = force ? OutputRules::OtherRun::replace : OutputRules::OtherRun::refuse;
  r.way_out = std::move(way_out);
  return r;
}

void add_force_flag(CLI::App* cmd, bool& force) {
  cmd->add_flag("--force", force,
                "Replace the run --out holds (a checkpoint, results): each of its files when the "
                "new run writes its own, the others when it ends (without --force such a folder "
                "is refused)");
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

std::string buckets_text(const lab::ModelConfig& m, const char* before, const char* after) {
  const auto& b = m.relative_bias;
  if (b.empty()) return "";
  return fmt::format("{}{} buckets, max distance {}{}", before, b.num_buckets, b.max_distance,
                     after);
}

}  // namespace posemb::cli
