// viz/ticks.hpp: axis ticks at round values, shared by the heatmap and the chart. Internal.
//
//   viz::nice_ticks(0, 33, 8);        // {0, 5, 10, 15, 20, 25, 30}
//   viz::nice_ticks(-1, 1, 5);        // {-1, -0.5, 0, 0.5, 1}
//   viz::format_tick(0.5);            // "0.5"
#pragma once

#include <string>
#include <vector>

namespace posemb::viz {

// Values k * step in [lo, hi], step = 1, 2 or 5 times a power of ten (and a multiple of
// `multiple_of` when it is > 0), the smallest such step giving at most max_ticks values.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks, double multiple_of = 0);
// A tick value as text: no trailing zeros ("0.5", "12", "-1").
std::string format_tick(double v);

}  // namespace posemb::viz
