#include "viz/ticks.hpp"

#include <cmath>
#include <cstdio>

namespace posemb::viz {

std::vector<double> nice_ticks(double lo, double hi, int max_ticks, double multiple_of) {
  std::vector<double> out;
  if (!(hi >= lo) || max_ticks < 1) return out;
  if (hi == lo) return {lo};
  const double span = hi - lo;
  double step = std::pow(10.0, std::floor(std::log10(span / max_ticks)));
  for (int guard = 0; guard < 64; ++guard) {
    for (double m : {1.0, 2.0, 5.0}) {
      double s = step * m;
      if (multiple_of > 0) s = std::ceil(s / multiple_of - 1e-9) * multiple_of;
      const double first = std::ceil(lo / s - 1e-9) * s;
      const auto count = static_cast<int>(std::floor((hi - first) / s + 1e-9)) + 1;
      if (count <= max_ticks) {
        for (int k = 0; k < count; ++k) {
          const double v = first + k * s;
          out.push_back(std::fabs(v) < 1e-12 * span ? 0.0 : v);
        }
        return out;
      }
    }
    step *= 10.0;
  }
  return out;
}

std::string format_tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace posemb::viz
