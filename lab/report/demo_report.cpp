// What the demo measured (lab/report/demo_report.hpp).
#include "lab/report/demo_report.hpp"

#include <algorithm>

namespace posemb::lab {

std::vector<const RunResults*> runs_of(const DemoReport& rep, const std::string& pe) {
  std::vector<const RunResults*> out;
  for (const auto& r : rep.runs) {
    if (r.pe == pe) out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(), [](const RunResults* a, const RunResults* b) {
    return a->seed.value_or(0) < b->seed.value_or(0);
  });
  return out;
}

std::vector<double> per_seed_mean_exact(const std::vector<const RunResults*>& runs, std::size_t lo,
                                        std::size_t hi) {
  std::vector<double> out;
  for (const RunResults* r : runs) {
    const auto m = mean_exact_match(*r, lo, hi);
    if (!m) return {};
    out.push_back(*m);
  }
  return out;
}

}  // namespace posemb::lab
