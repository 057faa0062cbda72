#include "sweep_flags.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"

namespace posemb::cli {
namespace {

// "1:3,7" -> 1, 2, 3, 7.
std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  const std::string bad =
      "--seeds '" + text + "' is not a comma-separated list of seeds and ranges A:B (e.g. 1:3,7)";
  auto num = [&](const std::string& s) -> std::uint64_t {
    std::uint64_t v = 0;
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) throw UsageError(bad);
    for (const char c : s) {
      const auto d = static_cast<std::uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) throw UsageError(bad + ": a seed is at most 2^64 - 1");
      v = v * 10 + d;
    }
    return v;
  };
  std::vector<std::uint64_t> seeds;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      seeds.push_back(num(item));
    } else {
      const std::uint64_t a = num(item.substr(0, colon)), b = num(item.substr(colon + 1));
      if (b < a || b - a >= 100000) throw UsageError(bad + ": a range A:B needs A <= B < A+100000");
      for (std::uint64_t k = 0; k <= b - a; ++k) seeds.push_back(a + k);  // b may be 2^64 - 1
    }
    at = comma + 1;
  }
  return seeds;
}

}  // namespace

std::vector<lab::SweepPoint> make_grid(const SweepOptions& o) {
  const auto seeds = parse_seeds(o.seeds);
  try {
    return lab::make_grid(o.lab, o, seeds);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"train.seed", "--seeds"}});  // sweep's list replaces train's --seed
  }
}

}  // namespace posemb::cli
