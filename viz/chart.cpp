#include "viz/chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "viz/ticks.hpp"

namespace posemb::viz {
namespace {

// Colour-blind-safe (Okabe-Ito), then dash patterns and marker shapes, one each per series.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73",
                                    "#CC79A7", "#E69F00", "#56B4E9"};
constexpr const char* kDashes[] = {"", "8,4", "2,3", "10,3,2,3", "4,4", "1,2"};
enum class Shape { circle, square, triangle, diamond };
constexpr Shape kShapes[] = {Shape::circle, Shape::square, Shape::triangle, Shape::diamond};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') {
      o += "&lt;";
    } else if (c == '>') {
      o += "&gt;";
    } else if (c == '&') {
      o += "&amp;";
    } else if (c == '"') {
      o += "&quot;";
    } else {
      o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A marker shape of radius r at (x, y), white-filled with a coloured outline.
std::string shape(Shape s, double x, double y, double r, const char* colour) {
  const std::string style =
      std::string(" fill=\"white\" stroke=\"") + colour + "\" stroke-width=\"1.5\"/>\n";
  switch (s) {
    case Shape::circle:
      return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\"" + style;
    case Shape::square:
      return "<rect x=\"" + num(x - r) + "\" y=\"" + num(y - r) + "\" width=\"" + num(2 * r) +
             "\" height=\"" + num(2 * r) + "\"" + style;
    case Shape::triangle:
      return "<polygon points=\"" + num(x) + "," + num(y - 1.2 * r) + " " + num(x - r) + "," +
             num(y + 0.8 * r) + " " + num(x + r) + "," + num(y + 0.8 * r) + "\"" + style;
    case Shape::diamond:
      return "<polygon points=\"" + num(x) + "," + num(y - 1.3 * r) + " " + num(x + r) + "," +
             num(y) + " " + num(x) + "," + num(y + 1.3 * r) + " " + num(x - r) + "," + num(y) +
             "\"" + style;
  }
  return {};
}

// The x range of the chart's points; throws std::invalid_argument for an unusable chart.
std::pair<double, double> x_range(const LineChart& c) {
  if (!(c.y_min < c.y_max)) {
    throw std::invalid_argument("line_chart_svg: y_min " + format_tick(c.y_min) +
                                " must be below y_max " + format_tick(c.y_max));
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : c.series) {
    if (s.x.size() != s.y.size()) {
      throw std::invalid_argument("line_chart_svg: series '" + s.name + "' has " +
                                  std::to_string(s.x.size()) + " x values and " +
                                  std::to_string(s.y.size()) + " y values");
    }
    if ((!s.lo.empty() || !s.hi.empty()) &&
        (s.lo.size() != s.x.size() || s.hi.size() != s.x.size())) {
      throw std::invalid_argument("line_chart_svg: series '" + s.name + "' has " +
                                  std::to_string(s.x.size()) + " points and a band of " +
                                  std::to_string(s.lo.size()) + " low and " +
                                  std::to_string(s.hi.size()) + " high values");
    }
    for (double x : s.x) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!(lo <= hi)) throw std::invalid_argument("line_chart_svg: no points to plot");
  if (hi == lo) hi = lo + 1;
  return {lo, hi};
}

// Where everything goes: the plot area (pw x ph at L, T), the legend to its right (as wide as
// its longest text), the whole picture W x H, and data to picture coordinates.
struct Frame {
  const LineChart& c;
  double lo, hi;  // x range
  std::vector<std::string> note_lines;
  std::size_t listed = 0;  // markers on the axis, listed in the legend
  double pw = 560, ph = 342, L = 72, R = 0, T = 56, B = 62, W = 0, H = 0;

  Frame(const LineChart& chart, double x_lo, double x_hi) : c(chart), lo(x_lo), hi(x_hi) {
    for (std::size_t a = 0; a <= c.note.size() && !c.note.empty();) {
      const std::size_t b = std::min(c.note.find('\n', a), c.note.size());
      note_lines.push_back(c.note.substr(a, b - a));
      a = b + 1;
    }
    // The legend's width from its longest text (DejaVu Sans averages about 0.52 em a character).
    double legend = 0.0;
    for (const auto& l : note_lines)
      legend = std::max(legend, 10.0 * 0.55 * static_cast<double>(l.size()));
    for (const auto& s : c.series) {
      legend = std::max(legend, 42 + 12.0 * 0.55 * static_cast<double>(s.name.size()));
    }
    for (const auto& m : c.markers) {
      if (m.x < lo || m.x > hi) continue;
      ++listed;
      legend = std::max(legend, 42 + 11.0 * 0.55 * static_cast<double>(m.label.size()));
    }
    R = 16 + std::max(160.0, legend) + 12;
    const double legend_h = 14 + 24.0 * static_cast<double>(c.series.size()) +
                            22.0 * static_cast<double>(listed) +
                            13.0 * static_cast<double>(note_lines.size()) + 12;
    W = L + pw + R;
    H = std::max(T + ph + B, T + legend_h);
  }
  double X(double x) const { return L + pw * (x - lo) / (hi - lo); }
  double Y(double y) const { return T + ph * (1.0 - (y - c.y_min) / (c.y_max - c.y_min)); }
};

// The picture's opening, title, grid, ticks, axes and axis labels.
void draw_axes(std::ostringstream& o, const Frame& f) {
  const auto& c = f.c;
  const double L = f.L, T = f.T, pw = f.pw, ph = f.ph;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(f.W) << "\" height=\""
    << num(f.H) << "\" viewBox=\"0 0 " << num(f.W) << ' ' << num(f.H)
    << "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << num(L + pw / 2) << "\" y=\"30\" text-anchor=\"middle\" font-size=\"15\">"
    << esc(c.title) << "</text>\n";
  for (double y : nice_ticks(c.y_min, c.y_max, 6)) {
    o << "<line x1=\"" << num(L) << "\" y1=\"" << num(f.Y(y)) << "\" x2=\"" << num(L + pw)
      << "\" y2=\"" << num(f.Y(y)) << "\" stroke=\"#e3e3e3\"/>\n";
    o << "<text x=\"" << num(L - 8) << "\" y=\"" << num(f.Y(y) + 4) << "\" text-anchor=\"end\">"
      << format_tick(y) << "</text>\n";
  }
  for (double x : nice_ticks(f.lo, f.hi, 14)) {
    o << "<line x1=\"" << num(f.X(x)) << "\" y1=\"" << num(T + ph) << "\" x2=\"" << num(f.X(x))
      << "\" y2=\"" << num(T + ph + 5) << "\" stroke=\"black\"/>\n";
    o << "<text x=\"" << num(f.X(x)) << "\" y=\"" << num(T + ph + 19)
      << "\" text-anchor=\"middle\">" << format_tick(x) << "</text>\n";
  }
  o << "<rect x=\"" << num(L) << "\" y=\"" << num(T) << "\" width=\"" << num(pw) << "\" height=\""
    << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << num(L + pw / 2) << "\" y=\"" << num(f.H - 16) << "\" text-anchor=\"middle\">"
    << esc(c.x_label) << "</text>\n";
  o << "<text transform=\"translate(20," << num(T + ph / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(c.y_label) << "</text>\n";
}

// A marker's colour: its series' when it names one, else dark grey.
const char* marker_colour(const LineChart& c, const Marker& m) {
  const char* colour = "#333333";
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    if (!m.series.empty() && c.series[i].name == m.series) colour = kColours[i % 6];
  }
  return colour;
}

// Vertical markers within the x range (returned); their labels are listed in the legend, with
// the same line style, so no text lies over the data.
std::vector<const Marker*> draw_markers(std::ostringstream& o, const Frame& f) {
  std::vector<const Marker*> shown;
  for (const auto& m : f.c.markers) {
    if (m.x < f.lo || m.x > f.hi) continue;
    shown.push_back(&m);
    o << "<line x1=\"" << num(f.X(m.x)) << "\" y1=\"" << num(f.T) << "\" x2=\"" << num(f.X(m.x))
      << "\" y2=\"" << num(f.T + f.ph) << "\" stroke=\"" << marker_colour(f.c, m)
      << "\" stroke-width=\"1.4\" stroke-dasharray=\"" << (m.series.empty() ? "6,4" : "2,3")
      << "\"/>\n";
  }
  return shown;
}

// Bands under every line: one translucent polygon per unbroken run of points.
void draw_bands(std::ostringstream& o, const Frame& f) {
  for (std::size_t i = 0; i < f.c.series.size(); ++i) {
    const auto& s = f.c.series[i];
    if (s.lo.empty()) continue;
    std::vector<std::size_t> run;
    auto flush = [&] {
      if (run.size() >= 2) {
        std::string pts;
        for (std::size_t k : run) pts += num(f.X(s.x[k])) + "," + num(f.Y(s.hi[k])) + " ";
        for (auto it = run.rbegin(); it != run.rend(); ++it) {
          pts += num(f.X(s.x[*it])) + "," + num(f.Y(s.lo[*it])) + " ";
        }
        o << "<polygon class=\"band\" fill=\"" << kColours[i % 6]
          << "\" fill-opacity=\"0.16\" stroke=\"none\" points=\"" << pts << "\"/>\n";
      }
      run.clear();
    };
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      if (std::isnan(s.lo[k]) || std::isnan(s.hi[k])) {
        flush();
      } else {
        run.push_back(k);
      }
    }
    flush();
  }
}

// Series: first drawn widest with the largest markers, later ones thinner on top; a NaN breaks
// the line.
void draw_series(std::ostringstream& o, const Frame& f) {
  for (std::size_t i = 0; i < f.c.series.size(); ++i) {
    const auto& s = f.c.series[i];
    const char* colour = kColours[i % 6];
    const char* dash = kDashes[i % 6];
    const double width = std::max(1.5, 3.0 - 0.5 * static_cast<double>(i));
    const double radius = std::max(2.5, 5.5 - 1.0 * static_cast<double>(i));
    std::string pts;
    auto flush = [&] {
      if (!pts.empty()) {
        o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"" << num(width)
          << "\"" << (*dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "")
          << " points=\"" << pts << "\"/>\n";
      }
      pts.clear();
    };
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      if (std::isnan(s.y[k])) {
        flush();
        continue;
      }
      pts += num(f.X(s.x[k])) + "," + num(f.Y(s.y[k])) + " ";
    }
    flush();
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      if (!std::isnan(s.y[k])) {
        o << shape(kShapes[i % 4], f.X(s.x[k]), f.Y(s.y[k]), radius, colour);
      }
    }
  }
}

// The legend: each series' line and marker, the markers shown, the note's lines.
void draw_legend(std::ostringstream& o, const Frame& f, const std::vector<const Marker*>& shown) {
  const auto& c = f.c;
  const double lx = f.L + f.pw + 16;
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const char* colour = kColours[i % 6];
    const char* dash = kDashes[i % 6];
    const double ly = f.T + 14 + 24.0 * static_cast<double>(i);
    o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(lx + 34)
      << "\" y2=\"" << num(ly) << "\" stroke=\"" << colour << "\" stroke-width=\"2\""
      << (*dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") << "/>\n";
    o << shape(kShapes[i % 4], lx + 17, ly, 4.5, colour);
    o << "<text x=\"" << num(lx + 42) << "\" y=\"" << num(ly + 4) << "\">" << esc(c.series[i].name)
      << "</text>\n";
  }
  double ly = f.T + 14 + 24.0 * static_cast<double>(c.series.size());
  for (const Marker* m : shown) {
    o << "<line x1=\"" << num(lx + 17) << "\" y1=\"" << num(ly - 9) << "\" x2=\"" << num(lx + 17)
      << "\" y2=\"" << num(ly + 9) << "\" stroke=\"" << marker_colour(c, *m)
      << "\" stroke-width=\"1.4\" stroke-dasharray=\"" << (m->series.empty() ? "6,4" : "2,3")
      << "\"/>\n";
    o << "<text x=\"" << num(lx + 42) << "\" y=\"" << num(ly + 4) << "\" font-size=\"11\" fill=\""
      << marker_colour(c, *m) << "\">" << esc(m->label) << "</text>\n";
    ly += 22;
  }
  for (std::size_t k = 0; k < f.note_lines.size(); ++k) {
    o << "<text x=\"" << num(lx) << "\" y=\"" << num(ly + 6 + 13.0 * k)
      << "\" font-size=\"10\" fill=\"#555\">" << esc(f.note_lines[k]) << "</text>\n";
  }
}

}  // namespace

std::string line_chart_svg(const LineChart& c) {
  const auto [lo, hi] = x_range(c);
  const Frame f(c, lo, hi);
  std::ostringstream o;
  draw_axes(o, f);
  const auto shown = draw_markers(o, f);
  draw_bands(o, f);
  draw_series(o, f);
  draw_legend(o, f, shown);
  o << "</svg>\n";
  return o.str();
}

}  // namespace posemb::viz
