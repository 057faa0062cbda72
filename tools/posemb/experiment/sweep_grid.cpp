#include "sweep_grid.hpp"

#include <algorithm>
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
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(bad);
    }
    return std::stoull(s);
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
      for (std::uint64_t s = a; s <= b; ++s) seeds.push_back(s);
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
    throw usage_error(e);
  }
}

}  // namespace posemb::cli
