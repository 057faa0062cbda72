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
      if (c.log_x && !(x > 0)) {
        throw std::invalid_argument("line_chart_svg: series '" + s.name + "' has x " +
                                    format_tick(x) + " on a log x axis (x must be above 0)");
      }
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!(lo <= hi)) throw std::invalid_argument("line_chart_svg: no points to plot");
  if (hi == lo) hi = c.log_x ? 2 * lo : lo + 1;
  return {lo, hi};
}

// A plot area in picture coordinates: left, top, width, height.
struct Area {
  double L, T, w, h;
};

// Where everything goes: the plot areas (one, or one per series for small multiples), the legend
// to their right (as wide as its longest text), the whole picture W x H, and data to picture
// coordinates in an area.
struct Frame {
  const LineChart& c;
  double lo, hi;  // x range
  std::vector<std::string> note_lines;
  std::vector<const Marker*> shown;  // markers within the x range, listed in the legend
  std::vector<Area> areas;
  double legend_x = 0, T = 56, W = 0, H = 0;

  Frame(const LineChart& chart, double x_lo, double x_hi) : c(chart), lo(x_lo), hi(x_hi) {
    std::string note = c.note;
    if (c.panels && c.series.size() > 1) {
      note += std::string(note.empty() ? "" : "\n") + "grey: the other panels' lines";
    }
    for (std::size_t a = 0; a <= note.size() && !note.empty();) {
      const std::size_t b = std::min(note.find('\n', a), note.size());
      note_lines.push_back(note.substr(a, b - a));
      a = b + 1;
    }
    for (const auto& m : c.markers) {
      if (m.x >= lo && m.x <= hi) shown.push_back(&m);
    }
    // The legend's width from its longest text (DejaVu Sans averages about 0.52 em a character).
    double legend = 0.0;
    for (const auto& l : note_lines)
      legend = std::max(legend, 10.0 * 0.55 * static_cast<double>(l.size()));
    for (const auto& s : c.series) {
      legend = std::max(legend, 42 + 12.0 * 0.55 * static_cast<double>(s.name.size()));
    }
    for (const Marker* m : shown) {
      legend = std::max(legend, 42 + 11.0 * 0.55 * static_cast<double>(m->label.size()));
    }
    const double legend_h = 14 + 24.0 * static_cast<double>(c.series.size()) +
                            22.0 * static_cast<double>(shown.size()) +
                            13.0 * static_cast<double>(note_lines.size()) + 12;
    constexpr double L = 72, B = 62;
    double right = L + 560, bottom = T + 342;
    if (c.panels && c.series.size() > 1) {
      // Small multiples: 2 or 3 columns, each panel titled with its series' name above it.
      const std::size_t n = c.series.size();
      const std::size_t cols = n <= 3 ? n : (n == 4 ? 2 : 3);
      constexpr double w = 270, h = 180, gap_x = 52, gap_y = 62, title = 22;
      for (std::size_t k = 0; k < n; ++k) {
        areas.push_back({L + static_cast<double>(k % cols) * (w + gap_x),
                         T + title + static_cast<double>(k / cols) * (h + gap_y), w, h});
      }
      right = areas[cols - 1].L + w;
      bottom = areas.back().T + h;
    } else {
      areas.push_back({L, T, right - L, bottom - T});
    }
    legend_x = right + 16;
    W = legend_x + std::max(160.0, legend) + 12;
    H = std::max(bottom + B, T + legend_h);
  }
  double X(const Area& a, double x) const {
    if (c.log_x) return a.L + a.w * std::log(x / lo) / std::log(hi / lo);
    return a.L + a.w * (x - lo) / (hi - lo);
  }
  // The x axis' ticks: round values, or on a log axis the powers of two in the range.
  std::vector<double> x_ticks() const {
    if (!c.log_x) return nice_ticks(lo, hi, panels() ? 6 : 14);
    std::vector<double> t;
    for (double x = std::exp2(std::ceil(std::log2(lo) - 1e-9)); x <= hi * (1 + 1e-9); x *= 2) {
      t.push_back(x);
    }
    return t;
  }
  double Y(const Area& a, double y) const {
    return a.T + a.h * (1.0 - (y - c.y_min) / (c.y_max - c.y_min));
  }
  bool panels() const { return areas.size() > 1; }
  // The plot areas' block, for the title and the axis labels.
  double left() const { return areas.front().L; }
  double right() const { return legend_x - 16; }
  double top() const { return areas.front().T; }
  double bottom() const { return areas.back().T + areas.back().h; }
};

// The picture's opening, title and axis labels.
void draw_frame(std::ostringstream& o, const Frame& f) {
  const auto& c = f.c;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(f.W) << "\" height=\""
    << num(f.H) << "\" viewBox=\"0 0 " << num(f.W) << ' ' << num(f.H)
    << "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const double mid = (f.left() + f.right()) / 2;
  o << "<text x=\"" << num(mid) << "\" y=\"30\" text-anchor=\"middle\" font-size=\"15\">"
    << esc(c.title) << "</text>\n";
  o << "<text x=\"" << num(mid) << "\" y=\"" << num(f.H - 16) << "\" text-anchor=\"middle\">"
    << esc(c.x_label) << "</text>\n";
  o << "<text transform=\"translate(20," << num((f.top() + f.bottom()) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(c.y_label) << "</text>\n";
}

// An area's grid, ticks and box.
void draw_axes(std::ostringstream& o, const Frame& f, const Area& a) {
  const auto& c = f.c;
  for (double y : nice_ticks(c.y_min, c.y_max, f.panels() ? 4 : 6)) {
    o << "<line x1=\"" << num(a.L) << "\" y1=\"" << num(f.Y(a, y)) << "\" x2=\"" << num(a.L + a.w)
      << "\" y2=\"" << num(f.Y(a, y)) << "\" stroke=\"#e3e3e3\"/>\n";
    o << "<text x=\"" << num(a.L - 8) << "\" y=\"" << num(f.Y(a, y) + 4)
      << "\" text-anchor=\"end\">" << format_tick(y) << "</text>\n";
  }
  for (double x : f.x_ticks()) {
    o << "<line x1=\"" << num(f.X(a, x)) << "\" y1=\"" << num(a.T + a.h) << "\" x2=\""
      << num(f.X(a, x)) << "\" y2=\"" << num(a.T + a.h + 5) << "\" stroke=\"black\"/>\n";
    o << "<text x=\"" << num(f.X(a, x)) << "\" y=\"" << num(a.T + a.h + 19)
      << "\" text-anchor=\"middle\">" << format_tick(x) << "</text>\n";
  }
  o << "<rect x=\"" << num(a.L) << "\" y=\"" << num(a.T) << "\" width=\"" << num(a.w)
    << "\" height=\"" << num(a.h) << "\" fill=\"none\" stroke=\"black\"/>\n";
}

// A marker's colour: its series' when it names one, else dark grey.
const char* marker_colour(const LineChart& c, const Marker& m) {
  const char* colour = "#333333";
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    if (!m.series.empty() && c.series[i].name == m.series) colour = kColours[i % 6];
  }
  return colour;
}

// Vertical markers in an area, their labels listed in the legend with the same line style, so no
// text lies over the data. Markers closer than kApart pixels (the training length and a table's
// last n, say) are drawn side by side, kApart apart and centred on their x, so none hides another.
void draw_markers(std::ostringstream& o, const Frame& f, const Area& a) {
  constexpr double kApart = 7.0;
  std::vector<std::pair<double, const Marker*>> at;
  for (const Marker* m : f.shown) at.emplace_back(f.X(a, m->x), m);
  std::stable_sort(at.begin(), at.end(),
                   [](const auto& p, const auto& q) { return p.first < q.first; });
  for (std::size_t b = 0; b < at.size();) {
    std::size_t e = b + 1;
    while (e < at.size() && at[e].first - at[e - 1].first < kApart) ++e;
    const double centre = (at[b].first + at[e - 1].first) / 2;
    for (std::size_t k = b; k < e; ++k) {
      const Marker& m = *at[k].second;
      const double x =
          e - b == 1
              ? at[k].first
              : centre + kApart * (static_cast<double>(k - b) - static_cast<double>(e - b - 1) / 2);
      o << "<line class=\"marker\" x1=\"" << num(x) << "\" y1=\"" << num(a.T) << "\" x2=\""
        << num(x) << "\" y2=\"" << num(a.T + a.h) << "\" stroke=\"" << marker_colour(f.c, m)
        << "\" stroke-width=\"1.8\" stroke-dasharray=\"" << (m.series.empty() ? "6,4" : "2,3")
        << "\"/>\n";
      // A cap above the box, in the marker's colour: two caps, two markers, however close.
      o << "<polygon class=\"marker-cap\" fill=\"" << marker_colour(f.c, m) << "\" points=\""
        << num(x - 3.5) << "," << num(a.T - 10) << " " << num(x + 3.5) << "," << num(a.T - 10)
        << " " << num(x) << "," << num(a.T - 2) << "\"/>\n";
    }
    b = e;
  }
}

// A series' band: one translucent polygon per unbroken run of points.
void draw_band(std::ostringstream& o, const Frame& f, const Area& a, std::size_t i) {
  const auto& s = f.c.series[i];
  if (s.lo.empty()) return;
  std::vector<std::size_t> run;
  auto flush = [&] {
    if (run.size() >= 2) {
      std::string pts;
      for (std::size_t k : run) pts += num(f.X(a, s.x[k])) + "," + num(f.Y(a, s.hi[k])) + " ";
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        pts += num(f.X(a, s.x[*it])) + "," + num(f.Y(a, s.lo[*it])) + " ";
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

// A series' line (a NaN breaks it): in its colour, dash pattern and marker shape, or `context`: a
// thin grey line without point markers, under another series' panel.
void draw_line(std::ostringstream& o, const Frame& f, const Area& a, std::size_t i, bool context) {
  const auto& s = f.c.series[i];
  const char* colour = context ? "#c4c4c4" : kColours[i % 6];
  const char* dash = context ? "" : kDashes[i % 6];
  // One panel: the first series widest with the largest markers, later ones thinner on top.
  const double width = context      ? 1.2
                       : f.panels() ? 2.5
                                    : std::max(1.5, 3.0 - 0.5 * static_cast<double>(i));
  const double radius = f.panels() ? 4.0 : std::max(2.5, 5.5 - 1.0 * static_cast<double>(i));
  std::string pts;
  auto flush = [&] {
    if (!pts.empty()) {
      o << "<polyline " << (context ? "class=\"context\" " : "") << "fill=\"none\" stroke=\""
        << colour << "\" stroke-width=\"" << num(width) << "\""
        << (*dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") << " points=\"" << pts
        << "\"/>\n";
    }
    pts.clear();
  };
  for (std::size_t k = 0; k < s.x.size(); ++k) {
    if (std::isnan(s.y[k])) {
      flush();
      continue;
    }
    pts += num(f.X(a, s.x[k])) + "," + num(f.Y(a, s.y[k])) + " ";
  }
  flush();
  if (context) return;
  for (std::size_t k = 0; k < s.x.size(); ++k) {
    if (!std::isnan(s.y[k]))
      o << shape(kShapes[i % 4], f.X(a, s.x[k]), f.Y(a, s.y[k]), radius, colour);
  }
}

// One panel: every series (bands under lines), or in small multiples panel i: its title, the
// other series in grey, then series i in colour.
void draw_plot(std::ostringstream& o, const Frame& f, std::size_t panel) {
  const Area& a = f.areas[panel];
  draw_axes(o, f, a);
  const std::size_t n = f.c.series.size();
  if (!f.panels()) {  // bands, then markers over them, then lines
    for (std::size_t i = 0; i < n; ++i) draw_band(o, f, a, i);
    draw_markers(o, f, a);
    for (std::size_t i = 0; i < n; ++i) draw_line(o, f, a, i, false);
    return;
  }
  draw_markers(o, f, a);
  o << "<text class=\"panel-title\" x=\"" << num(a.L + a.w / 2) << "\" y=\"" << num(a.T - 8)
    << "\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\" fill=\""
    << kColours[panel % 6] << "\">" << esc(f.c.series[panel].name) << "</text>\n";
  for (std::size_t i = 0; i < n; ++i) {
    if (i != panel) draw_line(o, f, a, i, true);
  }
  draw_band(o, f, a, panel);
  draw_line(o, f, a, panel, false);
}

// The legend: each series' line and marker, the markers shown, the note's lines.
void draw_legend(std::ostringstream& o, const Frame& f) {
  const auto& c = f.c;
  const double lx = f.legend_x;
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
  for (const Marker* m : f.shown) {
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
  draw_frame(o, f);
  for (std::size_t k = 0; k < f.areas.size(); ++k) draw_plot(o, f, k);
  draw_legend(o, f);
  o << "</svg>\n";
  return o.str();
}

}  // namespace posemb::viz
