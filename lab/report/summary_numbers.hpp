// lab/report/summary_numbers.hpp: what the summary's rules (lab/report/claims.cpp) and its text
// (lab/report/summary.cpp) share: number formatting and the numbers read from a DemoReport.
// Internal to the report room; users call lab/report/summary.hpp and claims.hpp.
//
//   summary_numbers::spread_text({0.97, 1.0, 0.99});          // "0.987 [0.970, 1.000]"
//   auto e = summary_numbers::numbers(rep, "sinusoidal");     // per seed: in, near, far
//   auto a = summary_numbers::curve_areas(rep.extension, "copy", L + 1, 2 * L);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/report/demo_report.hpp"
#include "lab/report/results.hpp"

namespace posemb::lab::summary_numbers {

std::string range(std::size_t lo, std::size_t hi);  // "n = lo..hi"
std::string fixed(double v, int digits);            // "%.*f"
// "0.997 [0.990, 1.000]" (mean [min, max] over seeds), or "-" for no values.
std::string spread_text(const std::vector<double>& v, int digits = 3);
double mean(const std::vector<double>& v);  // 0 for none

// What the summary needs of one encoding.
struct EncodingNumbers {
  bool present = false;
  std::vector<double> in, near, far;  // per seed: 1..L, L+1..L+3, L+1..far_end
  std::size_t far_end = 0;            // the longest n every run has rows for
  bool near_beyond = false;           // no rows past L (a learned table)
};
EncodingNumbers numbers(const DemoReport& rep, const std::string& pe);

// The methods of some extension runs, in the order of their first run.
std::vector<std::string> methods_of(const std::vector<ExtensionRun>& runs);
// Per seed of method's runs: the mean over the curve's points of the mean exact match at lo..hi
// (the area under the curve, divided by the number of points).
std::vector<double> curve_areas(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t lo, std::size_t hi);
// Per seed of method's runs: the mean exact match at lo..hi at the curve's point k (runs without
// that point are left out).
std::vector<double> curve_point(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t k, std::size_t lo, std::size_t hi);
// Per seed of method's runs: the mean exact match at lo..hi after fine-tuning.
std::vector<double> after_means(const std::vector<ExtensionRun>& runs, const std::string& method,
                                std::size_t lo, std::size_t hi);
// Per seed of method's runs: the loss of the first fine-tuning batch.
std::vector<double> first_losses(const std::vector<ExtensionRun>& runs, const std::string& method);

// "**reproduced**"; a quick run's budget is too small to refute a claim: a claim it does not meet
// is "not judged (quick run)".
std::string verdict(bool ok, bool quick);

}  // namespace posemb::lab::summary_numbers
