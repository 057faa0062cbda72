#include "posemb/grid_resize.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/overlap.hpp"
#include "grid_math.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/sincos_2d.hpp"
#include "posemb/table_provenance.hpp"
#include "table_checks.hpp"

namespace posemb {
namespace {

constexpr std::size_t kMaxGridSide = 65536;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// PyTorch's cubic convolution (aten/src/ATen/native/UpSample.h), A = -0.75.
constexpr double kCubicA = -0.75;
double cubic1(double x) {
  return ((kCubicA + 2) * x - (kCubicA + 3)) * x * x + 1;
}
double cubic2(double x) {
  return ((kCubicA * x - 5 * kCubicA) * x + 8 * kCubicA) * x - 4 * kCubicA;
}

// The taps of one output index: up to 4 source indices (clamped) and their weights.
struct Taps {
  std::array<std::size_t, 4> index{};
  std::array<double, 4> weight{};
  std::size_t count = 0;
};

// The taps of every output index o < out along an axis of `in` samples.
std::vector<Taps> axis_taps(std::size_t in, std::size_t out, GridMethod method) {
  std::vector<Taps> taps(out);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const auto last = static_cast<std::ptrdiff_t>(in) - 1;
  auto clamp = [&](std::ptrdiff_t i) {
    return static_cast<std::size_t>(i < 0 ? 0 : (i > last ? last : i));
  };
  for (std::size_t o = 0; o < out; ++o) {
    double s = scale * (static_cast<double>(o) + 0.5) - 0.5;
    Taps& t = taps[o];
    if (method == GridMethod::bilinear) {
      if (s < 0) s = 0;
      const auto i0 = static_cast<std::ptrdiff_t>(s);
      const double l1 = std::min(std::max(s - static_cast<double>(i0), 0.0), 1.0);
      t.count = 2;
      t.index = {clamp(i0), clamp(i0 < last ? i0 + 1 : i0), 0, 0};
      t.weight = {1.0 - l1, l1, 0, 0};
    } else {
      const double f = std::floor(s);
      const auto i0 = std::min(static_cast<std::ptrdiff_t>(f), last);
      const double x = std::min(std::max(s - static_cast<double>(i0), 0.0), 1.0);
      t.count = 4;
      t.index = {clamp(i0 - 1), clamp(i0), clamp(i0 + 1), clamp(i0 + 2)};
      t.weight = {cubic2(x + 1.0), cubic1(x), cubic1(1.0 - x), cubic2(2.0 - x)};
    }
  }
  return taps;
}

std::string rows_text(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " row" : " rows");
}

// The integer square root of n when n is a perfect square.
std::optional<std::size_t> exact_sqrt(std::size_t n) {
  const std::size_t r = detail::floor_sqrt(n);
  if (r * r != n) return std::nullopt;
  return r;
}

// g's cells, checked where they are formed, naming the operation and the grid.
std::size_t cells_of(std::string_view op, std::string_view name, GridShape g) {
  return checked_mul(g.height, g.width, op,
                     std::string(name) + " " + grid_shape_string(g) + "'s cells");
}

std::string prefix_text(std::size_t p) {
  return std::to_string(p) + (p == 1 ? " prefix token" : " prefix tokens");
}

}  // namespace

std::size_t GridShape::cells() const {
  return checked_mul(height, width, "grid " + grid_shape_string(*this), "its cells");
}

std::string_view grid_method_name(GridMethod method) noexcept {
  switch (method) {
    case GridMethod::bicubic:
      return "bicubic";
    case GridMethod::bilinear:
      return "bilinear";
    case GridMethod::sincos:
      return "sincos";
  }
  return "?";
}

GridMethod parse_grid_method(std::string_view name) {
  for (GridMethod m : {GridMethod::bicubic, GridMethod::bilinear, GridMethod::sincos}) {
    if (grid_method_name(m) == name) return m;
  }
  throw std::invalid_argument("parse_grid_method: unknown method " + quote_untrusted(name) +
                              " (bicubic, bilinear, sincos)");
}

GridShape parse_grid_shape(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("grid " + quote_untrusted(text) + ": " + why +
                                 " (write HEIGHTxWIDTH, e.g. 24x24)");
  };
  const std::size_t x = text.find_first_of("xX");
  if (x == std::string_view::npos) throw bad("no 'x' between height and width");
  auto side = [&](std::string_view s, const char* what) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) {
      throw bad(std::string(what) + " is not a whole number");
    }
    const std::string_view digits = s.substr(std::min(s.find_first_not_of('0'), s.size() - 1));
    if (digits.size() > 6) {  // past kMaxGridSide, and past what a size_t holds
      throw bad(std::string(what) + " is outside [1, " + std::to_string(kMaxGridSide) + "]");
    }
    std::size_t v = 0;
    for (char c : digits) v = v * 10 + static_cast<std::size_t>(c - '0');
    if (v == 0 || v > kMaxGridSide) {
      throw bad(std::string(what) + " " + std::to_string(v) + " is outside [1, " +
                std::to_string(kMaxGridSide) + "]");
    }
    return v;
  };
  return {side(text.substr(0, x), "height"), side(text.substr(x + 1), "width")};
}

std::string grid_shape_string(GridShape grid) {
  return std::to_string(grid.height) + "x" + std::to_string(grid.width);
}

void interpolate_grid(MatrixView<const float> grid, GridShape from, MatrixView<float> out,
                      GridShape to, GridMethod method) {
  const std::string op = "interpolate_grid: ";
  if (method == GridMethod::sincos) {
    throw std::invalid_argument(op + "sincos is not an interpolation; use resize_grid");
  }
  if (cells_of("interpolate_grid", "from", from) == 0 ||
      cells_of("interpolate_grid", "to", to) == 0) {
    throw std::invalid_argument(op + "grids " + grid_shape_string(from) + " -> " +
                                grid_shape_string(to) + ": a grid needs at least one cell");
  }
  if (grid.rows() != from.cells() || out.rows() != to.cells() || grid.cols() != out.cols()) {
    throw std::invalid_argument(op + "grid (" + std::to_string(grid.rows()) + ", " +
                                std::to_string(grid.cols()) + ") and out (" +
                                std::to_string(out.rows()) + ", " + std::to_string(out.cols()) +
                                ") do not hold " + grid_shape_string(from) + " -> " +
                                grid_shape_string(to) + " grids of the same width");
  }
  // out is written while grid is read (twice: both axes): a view of one into the other would
  // read interpolated values as the source.
  detail::check_no_overlap("interpolate_grid", "out", out, "grid", grid);
  const std::size_t C = grid.cols();
  // Along the width first: (from.height, to.width, C) in double, and the taps of both axes.
  const std::size_t mid_count =
      checked_mul(checked_mul(from.height, to.width, "interpolate_grid", "the intermediate grid"),
                  C, "interpolate_grid", "the intermediate grid's values");
  check_allocation("interpolate_grid",
                   saturating_add(saturating_mul(mid_count, sizeof(double)),
                                  saturating_mul(to.height + to.width, sizeof(Taps))));
  const std::vector<Taps> tw = axis_taps(from.width, to.width, method);
  const std::vector<Taps> th = axis_taps(from.height, to.height, method);
  std::vector<double> mid(mid_count, 0.0);
  for (std::size_t h = 0; h < from.height; ++h) {
    for (std::size_t w = 0; w < to.width; ++w) {
      double* dst = mid.data() + (h * to.width + w) * C;
      const Taps& t = tw[w];
      for (std::size_t k = 0; k < t.count; ++k) {
        const auto src = grid.row(h * from.width + t.index[k]);
        for (std::size_t c = 0; c < C; ++c) dst[c] += t.weight[k] * static_cast<double>(src[c]);
      }
    }
  }
  // Then along the height, rounded to float once.
  std::vector<double> acc(C);
  for (std::size_t h = 0; h < to.height; ++h) {
    const Taps& t = th[h];
    for (std::size_t w = 0; w < to.width; ++w) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::size_t k = 0; k < t.count; ++k) {
        const double* src = mid.data() + (t.index[k] * to.width + w) * C;
        for (std::size_t c = 0; c < C; ++c) acc[c] += t.weight[k] * src[c];
      }
      auto dst = out.row(h * to.width + w);
      for (std::size_t c = 0; c < C; ++c) dst[c] = static_cast<float>(acc[c]);
    }
  }
}

TableClass classify_table(const TensorFile& file, std::string_view name) {
  auto has = [&](std::string_view module, std::string_view leaf) {
    return file.find(std::string(module) + std::string(leaf)) != nullptr;
  };
  const Tensor* t = file.find(name);
  const bool three_d = t != nullptr && t->shape().size() == 3;
  if (ends_with(name, "vision_model.embeddings.position_embedding.weight")) {
    return {TableKind::vision, 1, "CLIP vision"};
  }
  if (ends_with(name, "visual.positional_embedding")) {
    return {TableKind::vision, 1, "CLIP vision (OpenAI)"};
  }
  if (ends_with(name, "embeddings.position_embeddings") && three_d) {
    const std::string_view module = name.substr(0, name.size() - 19);  // "...embeddings."
    if (has(module, "distillation_token")) return {TableKind::vision, 2, "DeiT (distilled)"};
    return {TableKind::vision, 1, "ViT"};
  }
  if (name == "pos_embed" || ends_with(name, ".pos_embed")) {
    const std::string_view module = name.substr(0, name.size() - 9);
    const bool cls = has(module, "cls_token");
    const bool dist = has(module, "dist_token");
    if (cls && dist) return {TableKind::vision, 2, "timm DeiT (distilled)"};
    if (cls) return {TableKind::vision, 1, "timm ViT"};
    return {TableKind::vision, 0, "timm ViT without a class token"};
  }
  if (name == "wpe.weight" || ends_with(name, ".wpe.weight")) {
    return {TableKind::sequence, 0, "GPT-2"};
  }
  if (ends_with(name, "embeddings.position_embeddings.weight")) {
    return {TableKind::sequence, 0, "BERT/RoBERTa"};
  }
  if (ends_with(name, "embeddings.position_embedding.weight")) {
    return {TableKind::sequence, 0, "CLIP text"};
  }
  if (ends_with(name, "embed_positions.weight")) return {TableKind::sequence, 0, "BART/Whisper"};
  if (ends_with(name, "positional_embedding")) {
    return {TableKind::sequence, 0, "OpenAI CLIP text/Whisper"};
  }
  return {TableKind::unknown, 0, ""};
}

VisionLayout vision_layout(const PositionTable& table, const TableClass& kind,
                           const VisionLayoutOptions& options) {
  const std::string what = "tensor " + quote_untrusted(table.source_tensor);
  const std::size_t rows = table.values.rows();
  if (kind.kind == TableKind::sequence) {
    throw std::invalid_argument(what + " is a 1-D " + kind.family +
                                " table of token positions, not a vision grid; resize it with "
                                "--to N and a 1-D method");
  }
  if (kind.kind == TableKind::unknown && !options.prefix_tokens) {
    throw std::invalid_argument(
        what +
        " is not a vision table posemb knows by name; pass "
        "--prefix-tokens N (the tokens before the grid) to treat it as one");
  }
  VisionLayout v;
  v.prefix_tokens = options.prefix_tokens.value_or(kind.prefix_tokens);
  const std::string by =
      options.prefix_tokens ? "as given" : kind.family + ", by the tensor's name";
  if (v.prefix_tokens >= rows) {
    throw std::invalid_argument(what + " has " + rows_text(rows) + ": no grid is left after " +
                                prefix_text(v.prefix_tokens));
  }
  const std::size_t cells = rows - v.prefix_tokens;
  if (options.from_grid) {
    if (cells_of("vision_layout", "from_grid", *options.from_grid) != cells) {
      throw std::invalid_argument(
          what + " has " + rows_text(rows) + ": " + prefix_text(v.prefix_tokens) + " (" + by +
          ") and a " + grid_shape_string(*options.from_grid) + " grid make " +
          std::to_string(saturating_add(v.prefix_tokens, options.from_grid->cells())));
    }
    v.grid = *options.from_grid;
  } else if (const auto side = exact_sqrt(cells)) {
    v.grid = {*side, *side};
  } else {
    std::string hint;
    for (std::size_t p = 0; p <= 2 && p < rows; ++p) {
      if (const auto s = exact_sqrt(rows - p); s && p != v.prefix_tokens) {
        hint = "; with " + prefix_text(p) + " it would be a " + std::to_string(*s) + "x" +
               std::to_string(*s) + " grid (--prefix-tokens " + std::to_string(p) + ")";
        break;
      }
    }
    throw std::invalid_argument(what + " has " + rows_text(rows) + ": after " +
                                prefix_text(v.prefix_tokens) + " (" + by + ") " +
                                std::to_string(cells) + " is not a square grid" + hint +
                                "; a non-square grid needs --from-grid HxW");
  }
  v.how = prefix_text(v.prefix_tokens) + " (" + by + "), a " + grid_shape_string(v.grid) + " grid";
  return v;
}

GridShape square_grid_for_rows(std::size_t rows, const VisionLayout& layout) {
  const std::size_t p = layout.prefix_tokens;
  if (rows > p) {
    if (const auto s = exact_sqrt(rows - p)) return {*s, *s};
  }
  // The largest side whose square grid, with the prefix, makes fewer rows than asked.
  std::size_t below = rows > p ? detail::floor_sqrt(rows - p) : 0;
  if (below != 0 && below * below + p >= rows) --below;
  const auto option = [&](std::size_t side) {
    return std::to_string(saturating_add(p, saturating_mul(side, side))) + " rows (" +
           std::to_string(side) + "x" + std::to_string(side) + ")";
  };
  const std::string near = (below == 0 ? "" : option(below) + " or ") + option(below + 1);
  throw std::invalid_argument(std::to_string(rows) + " rows do not make a square grid after " +
                              prefix_text(p) + " (" +
                              (rows > p ? std::to_string(rows - p) + " cells" : "no cell left") +
                              "); " + near + " would, or name the grid with --grid HxW");
}

PositionTable resize_grid(const PositionTable& table, const VisionLayout& layout, GridShape to,
                          GridMethod method) {
  const std::string op = "resize_grid: ";
  const std::size_t p = layout.prefix_tokens;
  const std::size_t C = table.values.cols();
  if (cells_of("resize_grid", "the layout's grid", layout.grid) == 0 || p > table.values.rows() ||
      layout.grid.cells() != table.values.rows() - p) {
    throw std::invalid_argument(op + prefix_text(p) + " and a " + grid_shape_string(layout.grid) +
                                " grid do not make the table's " + rows_text(table.values.rows()));
  }
  if (to.height == 0 || to.width == 0 || to.height > kMaxGridSide || to.width > kMaxGridSide ||
      p > kMaxGridTableRows || to.cells() > kMaxGridTableRows - p) {
    throw std::invalid_argument(
        op + "target grid " + grid_shape_string(to) + " with " + prefix_text(p) + " makes " +
        std::to_string(saturating_add(p, saturating_mul(to.height, to.width))) +
        " rows; a table may have at most " + std::to_string(kMaxGridTableRows) +
        " (prefix tokens included, as --to counts them)");
  }
  if (method == GridMethod::sincos && C % 4 != 0) {
    throw std::invalid_argument(
        op + "sincos needs a width that is a multiple of 4; the table's is " + std::to_string(C));
  }
  if (const std::string bad = detail::non_finite_description(table.values); !bad.empty()) {
    throw std::invalid_argument(op + "tensor " + quote_untrusted(table.source_tensor) + " holds " +
                                bad + "; posemb refuses tables with NaN or infinity");
  }
  PositionTable out = table;
  out.values = Matrix<float>(p + to.cells(), C);
  for (std::size_t r = 0; r < p; ++r) {  // the prefix rows, bit for bit
    std::memcpy(out.values.row(r).data(), table.values.row(r).data(), C * sizeof(float));
  }
  const MatrixView<float> grid_out = out.values.view().subrows(p, to.cells());
  if (method == GridMethod::sincos) {
    const Matrix<float> s = sincos_2d_position_table(to.height, to.width, C);
    for (std::size_t r = 0; r < s.rows(); ++r) {
      std::memcpy(grid_out.row(r).data(), s.row(r).data(), C * sizeof(float));
    }
  } else {
    interpolate_grid(table.values.cview().subrows(p, layout.grid.cells()), layout.grid, grid_out,
                     to, method);
  }
  out.reserved_rows = p;
  out.reserved_rows_recorded = false;
  out.training_length.reset();
  if (!out.stored_shape.empty()) out.stored_shape[out.stored_shape.size() - 2] = out.values.rows();
  // The lineage, as data (posemb/table_provenance.hpp) and for people.
  TableResize step;
  step.operation = "resize_grid";
  step.method = std::string(grid_method_name(method));
  step.from_positions = layout.grid.cells();
  step.to_positions = to.cells();
  step.reserved_rows = p;
  step.source_file = table.source_file;
  step.source_tensor = table.source_tensor;
  std::string how = "resize: " + step.method + " grid " + grid_shape_string(layout.grid) + " -> " +
                    grid_shape_string(to) + " (" + std::to_string(step.from_positions) + " -> " +
                    std::to_string(step.to_positions) + " positions), " + prefix_text(p) + " kept";
  if (!table.source_file.empty()) {
    how += ", from '" + table.source_file + "' tensor '" + table.source_tensor + "'";
  }
  out.provenance = table.provenance.empty() ? how : table.provenance + "; " + how;
  out.resizes.push_back(std::move(step));
  return out;
}

}  // namespace posemb
