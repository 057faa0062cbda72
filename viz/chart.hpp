// viz/chart.hpp: the one chart renderer (SVG): lines of y against x, with axes, ticks, a
// legend and labelled vertical markers.
//
//   viz::LineChart c;
//   c.title = "copy, trained on n <= 12";
//   c.x_label = "n";  c.y_label = "exact match";
//   c.series.push_back({"learned", {1, 2, 3}, {1.0, 1.0, NAN}});   // NaN: a gap in the line
//   c.markers.push_back({12, "training length n = 12", ""});
//   std::string svg = viz::line_chart_svg(c);
//
// Lines stay visible where they overlap: each series has its own colour, dash pattern and
// marker shape, and later series are drawn thinner and with smaller markers on top of earlier
// ones. A series may carry a band (the min-max of several seeds, say): a translucent area in its
// colour under every line. Markers and ticks are in the x axis' units; markers at (nearly) the
// same x are drawn side by side, a few pixels apart, so that none hides another.
//
// Lines that run together with their bands (fine-tuning curves of several methods) are easier
// read as small multiples: `c.panels = true` draws each series in a panel of its own (2 or 3
// columns, the series' name above it, the same axes in each), in its colour with its band, over
// the other series in thin grey for comparison.
#pragma once

#include <string>
#include <vector>

namespace posemb::viz {

struct Series {
  std::string name;
  std::vector<double> x, y;  // same length; y NaN breaks the line there
  // Optional band around the line: empty, or both of x's length (lo <= hi; NaN breaks it).
  std::vector<double> lo = {}, hi = {};
};

// A vertical dashed line at x, its label listed in the legend; colour: the series-neutral dark
// grey, or the colour of the series named `series` when that is set.
struct Marker {
  double x;
  std::string label;
  std::string series;  // "" or the name of a series whose colour the marker takes
};

struct LineChart {
  std::string title, x_label, y_label;
  double y_min = 0.0, y_max = 1.0;
  std::vector<Series> series;
  std::vector<Marker> markers;  // outside the x range: left out
  std::string note;             // small text under the legend, lines split at '\n' ("" for none)
  bool panels = false;          // small multiples: one panel per series (one series: one plot)
  // x on a logarithmic scale, ticked at the powers of two in its range (every x must be > 0).
  bool log_x = false;
};

// The SVG document. Throws std::invalid_argument when no series has a point, when x and y (or a
// band's lo and hi) differ in length, y_min >= y_max, or (log_x) an x is not above 0.
std::string line_chart_svg(const LineChart& chart);

}  // namespace posemb::viz
