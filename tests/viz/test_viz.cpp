// The renderer (viz/): heatmaps decoded back from their PNG bytes and checked pixel by pixel
// (size, scaling of small matrices, cell colours, the colour bar, text present where the title
// and ticks go); charts checked in their SVG (one polyline per unbroken run, distinct dash
// patterns, markers at x in the axis' units).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <stb_image.h>

#include "posemb/matrix.hpp"
#include "viz/chart.hpp"
#include "viz/heatmap.hpp"

namespace posemb::viz {
namespace {

struct Decoded {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
  std::array<int, 3> at(int x, int y) const {
    const auto* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Decoded decode(const std::string& png) {
  Decoded d;
  int n = 0;
  unsigned char* px = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png.data()),
                                            static_cast<int>(png.size()), &d.w, &d.h, &n, 3);
  EXPECT_NE(px, nullptr) << "not a PNG stb can read";
  if (px != nullptr) {
    d.rgb.assign(px, px + static_cast<std::size_t>(d.w) * d.h * 3);
    stbi_image_free(px);
  }
  return d;
}

bool is_dark(std::array<int, 3> c) {
  return c[0] < 110 && c[1] < 110 && c[2] < 110;
}

// Dark (text or tick) pixels in the rectangle [x0, x1) x [y0, y1).
int dark_pixels(const Decoded& d, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = std::max(0, y0); y < std::min(d.h, y1); ++y) {
    for (int x = std::max(0, x0); x < std::min(d.w, x1); ++x) n += is_dark(d.at(x, y)) ? 1 : 0;
  }
  return n;
}

bool is_red(std::array<int, 3> c) {
  return c[0] > 150 && c[1] < 80 && c[2] < 80;
}
bool is_blue(std::array<int, 3> c) {
  return c[2] > 150 && c[0] < 80 && c[1] < 140;
}

// The cells of a matrix whose (0, 0) is +1 (red): the top-left red pixel in reading order is
// cell (0, 0)'s corner (nothing above or left of the cells is red), and its run of red pixels
// is one cell wide when (0, 1) is not +1.
struct Box {
  int x0, y0, x1, y1;
};
struct Cells {
  int x0 = -1, y0 = -1, cell = 0;
};
Cells find_cells(const Decoded& d) {
  Cells c;
  for (int y = 0; y < d.h && c.x0 < 0; ++y) {
    for (int x = 0; x < d.w; ++x) {
      if (is_red(d.at(x, y))) {
        c.x0 = x;
        c.y0 = y;
        break;
      }
    }
  }
  if (c.x0 >= 0) {
    while (is_red(d.at(c.x0 + c.cell, c.y0))) ++c.cell;
  }
  return c;
}

TEST(Heatmap, SmallTableIsScaledUpWithTicksColourBarAndTitle) {
  // 34 x 34: +1 on the diagonal, -1 at (0, 33) and (33, 0), 0 elsewhere.
  Matrix<float> m(34, 34);
  for (std::size_t i = 0; i < 34; ++i) m(i, i) = 1.0f;
  m(0, 33) = m(33, 0) = -1.0f;
  HeatmapOptions o;
  o.title = "a title";
  const Decoded d = decode(heatmap_png(m, o));
  ASSERT_GT(d.w, 0);
  // Scaled: at least min_side pixels of cells a side, not one pixel per row.
  EXPECT_GE(d.w, 480 + 100);
  EXPECT_GE(d.h, 480 + 60);
  const Cells c = find_cells(d);
  ASSERT_GT(c.cell, 0) << "no red cell";
  EXPECT_GE(34 * c.cell, 480) << "cells of " << c.cell << " pixels";
  auto centre = [&](int i, int j) {
    return d.at(c.x0 + j * c.cell + c.cell / 2, c.y0 + i * c.cell + c.cell / 2);
  };
  // Row 0 at the top, column 0 at the left: red +1 on the diagonal, blue -1 at (0, 33) and
  // (33, 0), white 0 elsewhere; nothing past cell 33.
  EXPECT_TRUE(is_red(centre(20, 20)));
  EXPECT_TRUE(is_red(centre(33, 33)));
  EXPECT_TRUE(is_blue(centre(0, 33)));
  EXPECT_TRUE(is_blue(centre(33, 0)));
  EXPECT_EQ(centre(0, 1), (std::array<int, 3>{255, 255, 255}));
  EXPECT_FALSE(is_red(centre(34, 34)));
  EXPECT_FALSE(is_blue(centre(0, 34)));
  Box b{c.x0, c.y0, c.x0 + 34 * c.cell, c.y0 + 34 * c.cell};
  // The colour bar right of the cells: red at its top, blue at its bottom, white in the middle.
  int bar_x = -1;
  for (int x = b.x1 + 5; x < d.w && bar_x < 0; ++x) {
    if (is_red(d.at(x, b.y0 + 2))) bar_x = x + 3;
  }
  ASSERT_GT(bar_x, 0) << "no colour bar right of the cells";
  EXPECT_TRUE(is_blue(d.at(bar_x, b.y1 - 3)));
  const auto mid = d.at(bar_x, (b.y0 + b.y1) / 2);
  EXPECT_GT(mid[0], 235);
  EXPECT_GT(mid[2], 235);
  // Text: the title above, x tick labels below, y tick labels left, colour-bar labels right.
  EXPECT_GT(dark_pixels(d, 0, 0, d.w, b.y0 - 8), 20) << "no title";
  EXPECT_GT(dark_pixels(d, b.x0, b.y1 + 6, b.x1, b.y1 + 24), 20) << "no x tick labels";
  EXPECT_GT(dark_pixels(d, 0, b.y0, b.x0 - 6, b.y1), 20) << "no y tick labels";
  EXPECT_GT(dark_pixels(d, bar_x + 12, b.y0 - 6, d.w, b.y1 + 6), 20) << "no colour-bar labels";
}

TEST(Heatmap, LargerMatrixIsScaledByAWholeFactor) {
  // 300 x 300 cells (a table thinned to every 2nd position): scaled by 2 to reach 480 pixels.
  Matrix<float> m(300, 300);
  for (std::size_t i = 0; i < 300; ++i) m(i, i) = 1.0f;
  HeatmapOptions o;
  o.index_step = 2;
  const Decoded d = decode(heatmap_png(m, o));
  const Cells c = find_cells(d);
  EXPECT_EQ(c.cell, 2);
  EXPECT_TRUE(is_red(d.at(c.x0 + 299 * 2, c.y0 + 299 * 2)));
  EXPECT_FALSE(is_red(d.at(c.x0 + 300 * 2 + 1, c.y0 + 300 * 2 + 1)));
}

TEST(Heatmap, RefusesBadInputs) {
  Matrix<float> empty;
  EXPECT_THROW(heatmap_png(empty, {}), std::invalid_argument);
  Matrix<float> m(2, 2);
  HeatmapOptions o;
  o.vmin = 1;
  o.vmax = 1;
  EXPECT_THROW(heatmap_png(m, o), std::invalid_argument);
}

TEST(LineChart, LinesBreakAtGapsStyledApartAndMarkersInAxisUnits) {
  LineChart c;
  c.title = "t";
  c.x_label = "n";
  c.y_label = "exact";
  c.series.push_back({"a", {1, 2, 3, 4, 5}, {1, 1, 1, NAN, NAN}});
  c.series.push_back({"b", {1, 2, 3, 4, 5}, {1, 1, 1, 0.5, 0.2}});
  c.series.push_back({"c", {1, 2, 3, 4, 5}, {1, NAN, 1, 1, 0}});
  c.markers.push_back({3, "training length n = 3", ""});
  c.markers.push_back({3, "a: table holds n <= 3", "a"});
  c.markers.push_back({50, "off the axis", ""});
  const std::string svg = line_chart_svg(c);
  const std::regex poly("<polyline[^>]*points=\"([^\"]*)\"");
  std::vector<std::string> lines;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), poly); it != std::sregex_iterator();
       ++it) {
    lines.push_back((*it)[0]);
  }
  // a: one run (1..3); b: one run; c: two runs (1) and (3..5).
  EXPECT_EQ(lines.size(), 4u);
  // Each series has its own dash pattern (the first solid).
  std::set<std::string> dashes;
  for (const auto& l : lines) {
    std::smatch m;
    dashes.insert(std::regex_search(l, m, std::regex("stroke-dasharray=\"([^\"]*)\"")) ? m[1].str()
                                                                                       : "solid");
  }
  EXPECT_EQ(dashes.size(), 3u);
  // The two markers at n = 3 are drawn side by side, centred on where the points of n = 3 are,
  // each with a cap in its colour, so neither hides the other; the one at 50 is left out.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      svg, m, std::regex("<polyline[^>]*points=\"([0-9.]+),[0-9.]+ ([0-9.]+),[0-9.]+ ([0-9.]+),")));
  const double x3 = std::stod(m[3]);
  std::vector<double> marker_x;
  const std::regex marker("<line class=\"marker\" x1=\"([0-9.]+)\"[^>]*stroke=\"([^\"]*)\"");
  std::set<std::string> marker_colours;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker); it != std::sregex_iterator();
       ++it) {
    marker_x.push_back(std::stod((*it)[1]));
    marker_colours.insert((*it)[2]);
  }
  ASSERT_EQ(marker_x.size(), 2u);
  EXPECT_GE(std::abs(marker_x[0] - marker_x[1]), 5.0) << "markers at one x overlap";
  EXPECT_NEAR((marker_x[0] + marker_x[1]) / 2, x3, 0.11);
  EXPECT_EQ(marker_colours.size(), 2u);
  std::size_t caps = 0;
  for (std::size_t at = svg.find("class=\"marker-cap\""); at != std::string::npos;
       at = svg.find("class=\"marker-cap\"", at + 1)) {
    ++caps;
  }
  EXPECT_EQ(caps, 2u);
  EXPECT_EQ(svg.find("off the axis"), std::string::npos);
  EXPECT_NE(svg.find("training length n = 3"), std::string::npos);
  EXPECT_THROW(line_chart_svg({}), std::invalid_argument);
  // Marker labels are listed in the legend, right of the plot, not over the data.
  std::smatch lab;
  ASSERT_TRUE(
      std::regex_search(svg, lab, std::regex("<text x=\"([0-9.]+)\"[^>]*>training length")));
  EXPECT_GT(std::stod(lab[1]), 72.0 + 560.0);
}

// A log x axis: doublings evenly spaced, ticks at the powers of two, x <= 0 refused.
TEST(LineChart, LogXSpacesDoublingsEvenlyAndTicksPowersOfTwo) {
  LineChart c;
  c.title = "t";
  c.log_x = true;
  c.y_min = 2;
  c.y_max = 4;
  c.series.push_back({"a", {64, 128, 256, 512}, {3, 3, 3, 3}});
  const std::string svg = line_chart_svg(c);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      svg, m,
      std::regex("<polyline[^>]*points=\"([0-9.]+),[0-9.]+ ([0-9.]+),[0-9.]+ ([0-9.]+),[0-9.]+ "
                 "([0-9.]+),")));
  const double x0 = std::stod(m[1]), x1 = std::stod(m[2]), x2 = std::stod(m[3]),
               x3 = std::stod(m[4]);
  EXPECT_NEAR(x1 - x0, x2 - x1, 0.11);
  EXPECT_NEAR(x2 - x1, x3 - x2, 0.11);
  for (const char* tick : {">64<", ">128<", ">256<", ">512<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(">100<"), std::string::npos);  // not the linear axis' round values
  c.log_x = false;  // the same points on a linear axis: 128 to 256 twice 64 to 128
  const std::string lin = line_chart_svg(c);
  ASSERT_TRUE(std::regex_search(
      lin, m, std::regex("<polyline[^>]*points=\"([0-9.]+),[0-9.]+ ([0-9.]+),[0-9.]+ ([0-9.]+),")));
  EXPECT_NEAR(2 * (std::stod(m[2]) - std::stod(m[1])), std::stod(m[3]) - std::stod(m[2]), 0.2);
  c.log_x = true;
  c.series.push_back({"b", {0, 1}, {3, 3}});
  EXPECT_THROW(line_chart_svg(c), std::invalid_argument);
}

TEST(LineChart, BandsAreTranslucentAreasUnderTheLinesBrokenAtGaps) {
  LineChart c;
  c.series.push_back({"a",
                      {1, 2, 3, 4, 5},
                      {0.5, 0.5, 0.5, NAN, 0.5},
                      {0.2, 0.3, 0.4, NAN, 0.1},
                      {0.8, 0.7, 0.6, NAN, 0.9}});
  c.series.push_back({"b", {1, 2}, {1, 1}, {}, {}});
  const std::string svg = line_chart_svg(c);
  const std::regex band(
      "<polygon class=\"band\"[^>]*fill-opacity=\"0.16\"[^>]*points=\"([^\"]*)\"");
  std::vector<std::string> bands;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), band); it != std::sregex_iterator();
       ++it) {
    bands.push_back((*it)[1]);
  }
  // a: one band over x = 1..3 (6 corners); the single point at x = 5 and series b have none.
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_EQ(std::count(bands[0].begin(), bands[0].end(), ','), 6);
  // Bands are drawn before (under) every line.
  EXPECT_LT(svg.find("class=\"band\""), svg.find("<polyline"));
  LineChart bad = c;
  bad.series[0].hi.pop_back();
  EXPECT_THROW(line_chart_svg(bad), std::invalid_argument);
}

TEST(LineChart, PanelsDrawEachSeriesInItsOwnPanelOverTheOthersInGrey) {
  LineChart c;
  c.title = "t";
  c.panels = true;
  for (int i = 0; i < 5; ++i) {
    c.series.push_back({"s" + std::to_string(i),
                        {0, 100, 200},
                        {0.0, 0.1, 0.2 + 0.01 * i},
                        {0.0, 0.05, 0.1},
                        {0.0, 0.2, 0.3}});
  }
  const std::string svg = line_chart_svg(c);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  // Five panels, each titled with its series, its band and line in colour over the other four
  // lines in grey: 5 boxes, 5 titles, 5 bands, 5 coloured lines and 5 x 4 grey ones.
  EXPECT_EQ(count("class=\"panel-title\""), 5u);
  EXPECT_EQ(count("class=\"band\""), 5u);
  EXPECT_EQ(count("<polyline class=\"context\""), 20u);
  EXPECT_EQ(count("<polyline fill=\"none\""), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(svg.find(">s" + std::to_string(i) + "</text>"), std::string::npos);
  }
  // In each panel the grey lines come first, under the band and the coloured line.
  const std::size_t title1 =
      svg.find("class=\"panel-title\"", svg.find("class=\"panel-title\"") + 1);
  EXPECT_LT(svg.find("class=\"context\""), svg.find("class=\"band\""));
  EXPECT_LT(svg.find("<polyline fill=\"none\""), title1);
  // Panels: 3 columns, 2 rows; the boxes at distinct places.
  const std::regex box(
      "<rect x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"[0-9.]+\" fill=\"none\"");
  std::set<std::string> xs, ys;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator();
       ++it) {
    xs.insert((*it)[1]);
    ys.insert((*it)[2]);
  }
  EXPECT_EQ(xs.size(), 3u);
  EXPECT_EQ(ys.size(), 2u);
  // One series: one plot, as without panels.
  LineChart one = c;
  one.series.resize(1);
  EXPECT_EQ(line_chart_svg(one).find("panel-title"), std::string::npos);
}

}  // namespace
}  // namespace posemb::viz
