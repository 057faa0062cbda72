#include "viz/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "viz/image.hpp"
#include "viz/ticks.hpp"

namespace posemb::viz {
namespace {

constexpr float kTickPx = 13.0f, kLabelPx = 14.0f, kTitlePx = 16.0f;
constexpr Rgb kHigh{178, 24, 43}, kLow{33, 102, 172};  // ColorBrewer RdBu ends

Rgb colour(double v, double vmin, double vmax) {
  const double mid = 0.5 * (vmin + vmax), half = 0.5 * (vmax - vmin);
  double t = (v - mid) / half;
  if (!(t == t)) t = 0.0;  // NaN: white
  t = std::clamp(t, -1.0, 1.0);
  const Rgb end = t >= 0 ? kHigh : kLow;
  const double a = std::fabs(t);
  auto mix = [a](std::uint8_t to) {
    return static_cast<std::uint8_t>(std::lround(255.0 + (to - 255.0) * a));
  };
  return {mix(end.r), mix(end.g), mix(end.b)};
}

// Position ticks along an axis of `cells` cells: (pixel offset of the cell's centre, label).
std::vector<std::pair<int, std::string>> position_ticks(std::size_t cells, int cell,
                                                        const HeatmapOptions& o) {
  const double first = static_cast<double>(o.first_index);
  const double step = static_cast<double>(o.index_step);
  const double last = first + step * static_cast<double>(cells - 1);
  const int max_ticks = std::clamp(static_cast<int>(cells) * cell / 70, 2, 10);
  std::vector<std::pair<int, std::string>> out;
  for (double p : nice_ticks(first, last, max_ticks, step)) {
    const auto i = static_cast<std::size_t>(std::lround((p - first) / step));
    out.emplace_back(static_cast<int>(i) * cell + cell / 2, format_tick(p));
  }
  return out;
}

}  // namespace

std::string heatmap_png(MatrixView<const float> values, const HeatmapOptions& o) {
  const std::size_t rows = values.rows(), cols = values.cols();
  if (rows == 0 || cols == 0) {
    throw std::invalid_argument("heatmap_png: the matrix is " + std::to_string(rows) + " x " +
                                std::to_string(cols) + "; nothing to draw");
  }
  if (!(o.vmin < o.vmax) || o.index_step == 0) {
    throw std::invalid_argument("heatmap_png: the scale needs vmin < vmax (got " +
                                format_tick(o.vmin) + ", " + format_tick(o.vmax) +
                                ") and index_step >= 1 (got " + std::to_string(o.index_step) + ")");
  }
  if (std::max(rows, cols) > 16384) {
    throw std::invalid_argument("heatmap_png: " + std::to_string(rows) + " x " +
                                std::to_string(cols) +
                                " cells; thin the matrix to at most 16384 "
                                "per side first");
  }
  const Font& font = Font::get();
  const auto longest = static_cast<int>(std::max(rows, cols));
  const int cell = std::max(1, (o.min_side + longest - 1) / longest);
  const int pw = static_cast<int>(cols) * cell, ph = static_cast<int>(rows) * cell;
  const auto yticks = position_ticks(rows, cell, o);
  const auto xticks = position_ticks(cols, cell, o);
  const auto sticks = nice_ticks(o.vmin, o.vmax, 5);
  int ylabel_w = 0, slabel_w = 0;
  for (const auto& t : yticks) ylabel_w = std::max(ylabel_w, font.width(t.second, kTickPx));
  for (double v : sticks) slabel_w = std::max(slabel_w, font.width(format_tick(v), kTickPx));
  // Layout: title on top, y label and ticks on the left, x ticks and label below, the colour
  // bar with its ticks and label on the right.
  const int top = 44, left = 34 + ylabel_w + 10, bottom = 56;
  const int bar_x = left + pw + 22, bar_w = 18;
  const int right = 22 + bar_w + 6 + slabel_w + 30;
  const int width = std::max(left + pw + right, font.width(o.title, kTitlePx) + 20);
  const int height = top + ph + bottom;
  Image img(width, height, kWhite);
  // The title centred over the plot, or over the image when it would not fit there.
  const int title_w = font.width(o.title, kTitlePx);
  int title_x = left + pw / 2;
  if (title_x - title_w / 2 < 10 || title_x + title_w / 2 > width - 10) title_x = width / 2;
  font.draw(img, o.title, kTitlePx, title_x, 26, kBlack, Align::center);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      img.fill_rect(left + static_cast<int>(j) * cell, top + static_cast<int>(i) * cell, cell, cell,
                    colour(values(i, j), o.vmin, o.vmax));
    }
  }
  img.stroke_rect(left - 1, top - 1, pw + 2, ph + 2, kGray);
  for (const auto& [off, text] : xticks) {
    img.fill_rect(left + off, top + ph + 1, 1, 5, kBlack);
    font.draw(img, text, kTickPx, left + off, top + ph + 19, kBlack, Align::center);
  }
  for (const auto& [off, text] : yticks) {
    img.fill_rect(left - 6, top + off, 5, 1, kBlack);
    font.draw(img, text, kTickPx, left - 9, top + off + 5, kBlack, Align::right);
  }
  font.draw(img, o.x_label, kLabelPx, left + pw / 2, top + ph + 44, kBlack, Align::center);
  font.draw_vertical(img, o.y_label, kLabelPx, 14, top + ph / 2, kBlack);
  // The colour bar: vmax at the top, vmin at the bottom, ticks on its right.
  for (int y = 0; y < ph; ++y) {
    const double v = o.vmax - (o.vmax - o.vmin) * (y + 0.5) / ph;
    img.fill_rect(bar_x, top + y, bar_w, 1, colour(v, o.vmin, o.vmax));
  }
  img.stroke_rect(bar_x - 1, top - 1, bar_w + 2, ph + 2, kGray);
  for (double v : sticks) {
    const int y = top + static_cast<int>(std::lround((o.vmax - v) / (o.vmax - o.vmin) * (ph - 1)));
    img.fill_rect(bar_x + bar_w + 1, y, 4, 1, kBlack);
    font.draw(img, format_tick(v), kTickPx, bar_x + bar_w + 7, y + 5, kBlack, Align::left);
  }
  font.draw_vertical(img, o.scale_label, kLabelPx, bar_x + bar_w + 6 + slabel_w + 18, top + ph / 2,
                     kBlack);
  return img.png();
}

}  // namespace posemb::viz
