// --max-memory (tools/posemb/memory_flag.hpp).
#include "memory_flag.hpp"

#include <fmt/core.h>
#include <sys/resource.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "posemb/errors.hpp"
#include "posemb/memory.hpp"

namespace posemb::cli {
namespace {

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

}  // namespace

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

void add_memory_flag(CLI::App& app) {
  posemb::set_memory_limit(default_budget());
  const std::string default_text = human_bytes(posemb::memory_limit());
  add_memory_option(&app, default_text);
  for (CLI::App* sub : app.get_subcommands({})) add_memory_option(sub, default_text);
}

}  // namespace posemb::cli
