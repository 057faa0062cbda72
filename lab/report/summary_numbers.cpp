// The numbers the summary's rules and text share (lab/report/summary_numbers.hpp).
#include "lab/report/summary_numbers.hpp"

#include <algorithm>
#include <cstdio>

namespace posemb::lab::summary_numbers {

std::string range(std::size_t lo, std::size_t hi) {
  return "n = " + std::to_string(lo) + ".." + std::to_string(hi);
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string spread_text(const std::vector<double>& v, int digits) {
  if (v.empty()) return "-";
  const Spread s = spread_of(v);
  if (s.count == 1) return fixed(s.mean, digits);
  return fixed(s.mean, digits) + " [" + fixed(s.min, digits) + ", " + fixed(s.max, digits) + "]";
}

double mean(const std::vector<double>& v) {
  return spread_of(v).mean;
}

EncodingNumbers numbers(const DemoReport& rep, const std::string& pe) {
  EncodingNumbers e;
  const auto runs = runs_of(rep, pe);
  if (runs.empty()) return e;
  e.present = true;
  const std::size_t L = rep.task.train_len;
  std::size_t top = 0;
  for (const auto& ls : spread_by_length(runs)) {
    if (ls.beyond_table) break;
    top = ls.length;
  }
  e.far_end = top;
  e.in = per_seed_mean_exact(runs, 1, L);
  e.near = per_seed_mean_exact(runs, L + 1, std::min(L + 3, top));
  e.far = per_seed_mean_exact(runs, L + 1, top);
  e.near_beyond = e.near.empty();
  return e;
}

std::vector<std::string> methods_of(const std::vector<ExtensionRun>& runs) {
  std::vector<std::string> methods;
  for (const auto& r : runs) {
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
      methods.push_back(r.method);
    }
  }
  return methods;
}

std::vector<double> curve_areas(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t lo, std::size_t hi) {
  std::vector<double> out;
  for (const auto& r : runs) {
    if (r.method == method) out.push_back(mean(curve_mean_exact(r, lo, hi)));
  }
  return out;
}

std::vector<double> curve_point(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t k, std::size_t lo, std::size_t hi) {
  std::vector<double> out;
  for (const auto& r : runs) {
    if (r.method == method && k < r.curve.size()) out.push_back(curve_mean_exact(r, lo, hi)[k]);
  }
  return out;
}

std::vector<double> after_means(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t lo, std::size_t hi) {
  std::vector<double> out;
  for (const auto& r : runs) {
    RunResults after;
    after.results = r.after;
    const auto v = mean_exact_match(after, lo, hi);
    if (r.method == method && v) out.push_back(*v);
  }
  return out;
}

std::vector<double> first_losses(const std::vector<ExtensionRun>& runs, const std::string& method) {
  std::vector<double> out;
  for (const auto& r : runs) {
    if (r.method == method) out.push_back(r.first_loss);
  }
  return out;
}

std::string verdict(bool ok, bool quick) {
  if (ok) return "**reproduced**";
  return quick ? "not judged (quick run)" : "**not reproduced at this budget**";
}

}  // namespace posemb::lab::summary_numbers
