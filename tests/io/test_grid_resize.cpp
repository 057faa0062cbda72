// Vision tables resized as 2-D grids: interpolate_grid against a plain 2-D reference (the
// kernel's formulas evaluated tap by tap, not separably) and against PyTorch's
// torch.nn.functional.interpolate (tests/oracles/torch_grid_resize.py); prefix rows bit for bit;
// ViT (1, N, C) and CLIP (N, C) storage; the 2-D sin-cos table against MAE's numpy code; the
// prefix-token detection and its refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "posemb/grid_resize.hpp"
#include "posemb/sincos_2d.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

// Keys' cubic convolution kernel with PyTorch's A = -0.75, in its textbook form.
double keys(double x) {
  const double a = -0.75;
  x = std::fabs(x);
  if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
  if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
  return 0;
}

// The 1-D weights of output o over input indices [0, in), per align_corners=False.
std::vector<double> weights_1d(std::size_t in, std::size_t out, std::size_t o, GridMethod m) {
  std::vector<double> w(in, 0.0);
  double s =
      (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
  auto at = [&](long i) { return static_cast<std::size_t>(std::clamp(i, 0L, long(in) - 1)); };
  if (m == GridMethod::bilinear) {
    s = std::max(s, 0.0);
    const long i0 = static_cast<long>(std::floor(s));
    w[at(i0)] += 1 - (s - double(i0));
    w[at(i0 + 1)] += s - double(i0);
  } else {
    const long i0 = static_cast<long>(std::floor(s));
    for (long k = i0 - 1; k <= i0 + 2; ++k) w[at(k)] += keys(s - double(k));
  }
  return w;
}

// out(h, w, c) = sum over (i, j) of wh[i] * ww[j] * grid(i, j, c): every input cell, directly.
Matrix<double> reference_2d(const Matrix<float>& grid, GridShape from, GridShape to, GridMethod m) {
  Matrix<double> out(to.cells(), grid.cols());
  for (std::size_t h = 0; h < to.height; ++h) {
    const auto wh = weights_1d(from.height, to.height, h, m);
    for (std::size_t w = 0; w < to.width; ++w) {
      const auto ww = weights_1d(from.width, to.width, w, m);
      for (std::size_t i = 0; i < from.height; ++i) {
        for (std::size_t j = 0; j < from.width; ++j) {
          for (std::size_t c = 0; c < grid.cols(); ++c) {
            out(h * to.width + w, c) += wh[i] * ww[j] * grid(i * from.width + j, c);
          }
        }
      }
    }
  }
  return out;
}

// Bound: the sum of |weights| (at most 1.6 per axis for bicubic) times the largest |value|,
// times a few double epsilons, plus the final rounding to float.
double magnitude(const Matrix<float>& m) {
  double mx = 0;
  for (float v : m.flat()) mx = std::max(mx, double(std::fabs(v)));
  return std::max(mx, 1.0);
}

TEST(GridResize, InterpolateMatchesThePlainTwoDimensionalReference) {
  const GridShape shapes[][2] = {{{4, 4}, {7, 7}}, {{7, 7}, {3, 3}}, {{3, 5}, {6, 4}},
                                 {{5, 2}, {2, 9}}, {{1, 1}, {3, 2}}, {{6, 6}, {6, 6}}};
  for (GridMethod m : {GridMethod::bicubic, GridMethod::bilinear}) {
    for (const auto& s : shapes) {
      SCOPED_TRACE(std::string(grid_method_name(m)) + " " + grid_shape_string(s[0]) + " -> " +
                   grid_shape_string(s[1]));
      const Matrix<float> g = testing::random_matrix(s[0].cells(), 5, 3);
      Matrix<float> out(s[1].cells(), 5);
      interpolate_grid(g, s[0], out.view(), s[1], m);
      const Matrix<double> ref = reference_2d(g, s[0], s[1], m);
      const double bound = 1e-7 * magnitude(g) * 4;  // float rounding of values up to ~2.6x
      for (std::size_t r = 0; r < out.rows(); ++r) {
        for (std::size_t c = 0; c < 5; ++c) ASSERT_NEAR(out(r, c), ref(r, c), bound) << r;
      }
    }
  }
}

TEST(GridResize, SameGridIsAnExactCopy) {
  const Matrix<float> g = testing::random_matrix(12, 3, 8);
  for (GridMethod m : {GridMethod::bicubic, GridMethod::bilinear}) {
    Matrix<float> out(12, 3);
    interpolate_grid(g, {3, 4}, out.view(), {3, 4}, m);
    EXPECT_EQ(testing::bytes_of(out), testing::bytes_of(g));
  }
}

PositionTable vit_table(std::size_t prefix, GridShape grid, std::size_t dim, bool three_d) {
  PositionTable t;
  t.values = testing::random_matrix(prefix + grid.cells(), dim, 11);
  t.source_tensor = three_d ? "vit.embeddings.position_embeddings"
                            : "vision_model.embeddings.position_embedding.weight";
  if (three_d) t.stored_shape = {1, t.values.rows(), dim};
  return t;
}

// One case against PyTorch: the table, posemb's resize, and the oracle's line.
struct TorchCase {
  std::size_t prefix;
  GridShape from, to;
  GridMethod method;
  bool three_d;
  PositionTable table, resized;
  std::string name() const {
    return std::string(grid_method_name(method)) + "-p" + std::to_string(prefix) + "-" +
           grid_shape_string(from) + "-" + grid_shape_string(to) + (three_d ? "-3d" : "-2d");
  }
};

// The tables resized by posemb and by PyTorch (timm's recipe, one oracle run for every case),
// compared: prefix rows bit for bit, the grid within 1e-5 (values are O(1)).
TEST(GridResizeTorch, BicubicAndBilinearUpDownSquareNonSquareOneAndTwoPrefixTokens) {
  const GridShape shapes[][2] = {{{4, 4}, {6, 6}},  // up, square
                                 {{6, 6}, {4, 4}},  // down, square
                                 {{4, 4}, {3, 5}},  // to non-square
                                 {{3, 5}, {7, 4}},  // non-square to non-square
                                 {{5, 5}, {2, 2}}};
  const std::size_t C = 6;
  std::vector<TorchCase> cases;
  for (GridMethod m : {GridMethod::bicubic, GridMethod::bilinear}) {
    for (const auto& sh : shapes) {
      for (std::size_t prefix : {1u, 2u}) {
        for (bool three_d : {true, false}) {
          TorchCase k{prefix, sh[0], sh[1], m, three_d, vit_table(prefix, sh[0], C, three_d), {}};
          k.resized = resize_grid(k.table, {prefix, k.from, ""}, k.to, m);
          cases.push_back(std::move(k));
        }
      }
    }
  }
  testing::TempDir dir;
  std::string lines;
  for (const TorchCase& k : cases) {
    testing::write_raw(dir.file(k.name() + ".f32"), k.table.values);
    lines += k.name() + " interp " + std::to_string(k.table.values.rows()) + " " +
             std::to_string(C) + " " + std::to_string(k.prefix) + " " +
             std::to_string(k.from.height) + " " + std::to_string(k.from.width) + " " +
             std::to_string(k.to.height) + " " + std::to_string(k.to.width) + " " +
             std::string(grid_method_name(k.method)) + "\n";
  }
  std::ofstream(dir.file("cases.txt")) << lines;
  testing::run_oracle("torch_grid_resize.py", dir.file(""));
  for (const TorchCase& k : cases) {
    SCOPED_TRACE(k.name());
    const PositionTable& r = k.resized;
    const auto torch =
        testing::read_raw<float>(dir.file(k.name() + ".out.f32"), k.prefix + k.to.cells(), C);
    ASSERT_EQ(r.values.rows(), k.prefix + k.to.cells());
    for (std::size_t row = 0; row < k.prefix; ++row) {  // prefix rows: bit for bit
      ASSERT_EQ(std::memcmp(r.values.row(row).data(), k.table.values.row(row).data(), C * 4), 0);
    }
    for (std::size_t row = k.prefix; row < r.values.rows(); ++row) {
      for (std::size_t c = 0; c < C; ++c) {
        ASSERT_NEAR(r.values(row, c), torch(row, c), 1e-5) << row;
      }
    }
    EXPECT_EQ(r.reserved_rows, k.prefix);
    if (k.three_d) {
      EXPECT_EQ(r.stored_shape, (std::vector<std::uint64_t>{1, k.prefix + k.to.cells(), C}));
    } else {
      EXPECT_TRUE(r.stored_shape.empty());
    }
  }
}

TEST(Sincos2d, IsMaesTableWithAndWithoutAClassToken) {
  const std::tuple<std::size_t, std::size_t, std::size_t, bool> cases[] = {
      {4, 4, 16, true}, {3, 5, 8, false}, {14, 14, 64, true}};
  testing::TempDir dir;
  std::string lines;
  for (const auto& [h, w, d, cls] : cases) {
    lines += "s" + std::to_string(h) + "x" + std::to_string(w) + " sincos " + std::to_string(h) +
             " " + std::to_string(w) + " " + std::to_string(d) + " " + (cls ? "1" : "0") + "\n";
  }
  std::ofstream(dir.file("cases.txt")) << lines;
  testing::run_oracle("torch_grid_resize.py", dir.file(""));
  for (const auto& [h, w, d, cls] : cases) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " d=" + std::to_string(d));
    const Matrix<float> pe = sincos_2d_position_table(h, w, d, cls);
    const auto mae = testing::read_raw<float>(
        dir.file("s" + std::to_string(h) + "x" + std::to_string(w) + ".out.f32"),
        (cls ? 1 : 0) + h * w, d);
    ASSERT_EQ(pe.rows(), mae.rows());
    // sin and cos of the same double angle, each rounded to float: equal up to an ulp.
    for (std::size_t r = 0; r < pe.rows(); ++r) {
      for (std::size_t c = 0; c < d; ++c) {
        ASSERT_NEAR(pe(r, c), mae(r, c), 1.2e-7) << r << "," << c;
      }
    }
  }
  EXPECT_THROW(sincos_2d_position_table(2, 2, 6), std::invalid_argument);
  EXPECT_THROW(sincos_2d_position_table(0, 2, 8), std::invalid_argument);
}

TEST(GridResize, SincosMethodKeepsThePrefixAndWritesMaesGrid) {
  const PositionTable t = vit_table(1, {2, 2}, 8, true);
  const PositionTable r = resize_grid(t, {1, {2, 2}, ""}, {3, 3}, GridMethod::sincos);
  const Matrix<float> s = sincos_2d_position_table(3, 3, 8, true);
  EXPECT_EQ(std::memcmp(r.values.row(0).data(), t.values.row(0).data(), 32), 0);
  ASSERT_EQ(r.resizes.size(), 1u);  // the lineage, as data
  EXPECT_EQ(r.resizes[0].operation, "resize_grid");
  EXPECT_EQ(r.resizes[0].method, "sincos");
  EXPECT_EQ(r.resizes[0].from_positions, 4u);
  EXPECT_EQ(r.resizes[0].to_positions, 9u);
  EXPECT_EQ(r.resizes[0].reserved_rows, 1u);
  EXPECT_NE(r.provenance.find("grid 2x2 -> 3x3"), std::string::npos) << r.provenance;
  for (std::size_t row = 1; row < 10; ++row) {
    EXPECT_EQ(std::memcmp(r.values.row(row).data(), s.row(row).data(), 32), 0) << row;
  }
}

TensorFile names(std::initializer_list<std::pair<std::string, std::vector<std::uint64_t>>> ts) {
  TensorFile f;
  for (const auto& [n, shape] : ts) {
    std::uint64_t count = 1;
    for (auto s : shape) count *= s;
    const std::vector<std::byte> bytes(count * 4);
    f.tensors.push_back(Tensor::from_bytes(n, DType::F32, shape, bytes));
  }
  return f;
}

TEST(GridResize, PrefixTokensFromTheNameConfirmedByTheShape) {
  const TensorFile vit = names({{"vit.embeddings.cls_token", {1, 1, 4}},
                                {"vit.embeddings.position_embeddings", {1, 197, 4}}});
  const TableClass k = classify_table(vit, "vit.embeddings.position_embeddings");
  EXPECT_EQ(k.kind, TableKind::vision);
  EXPECT_EQ(k.prefix_tokens, 1u);
  const TensorFile deit = names({{"deit.embeddings.distillation_token", {1, 1, 4}},
                                 {"deit.embeddings.position_embeddings", {1, 198, 4}}});
  EXPECT_EQ(classify_table(deit, "deit.embeddings.position_embeddings").prefix_tokens, 2u);
  const TensorFile timm =
      names({{"cls_token", {1, 1, 4}}, {"dist_token", {1, 1, 4}}, {"pos_embed", {1, 198, 4}}});
  EXPECT_EQ(classify_table(timm, "pos_embed").prefix_tokens, 2u);
  const TensorFile clip = names({{"vision_model.embeddings.position_embedding.weight", {50, 4}}});
  EXPECT_EQ(classify_table(clip, "vision_model.embeddings.position_embedding.weight").prefix_tokens,
            1u);
  const TensorFile gpt = names({{"wpe.weight", {1024, 4}}});
  EXPECT_EQ(classify_table(gpt, "wpe.weight").kind, TableKind::sequence);

  PositionTable t = vit_table(1, {14, 14}, 4, true);
  const VisionLayout v = vision_layout(t, k);
  EXPECT_EQ(v.prefix_tokens, 1u);
  EXPECT_EQ(v.grid, (GridShape{14, 14}));
  // 2 prefix tokens on a 197-row table: 195 is no square; the message names the prefix that fits.
  try {
    vision_layout(t, {TableKind::vision, 2, "DeiT (distilled)"});
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--prefix-tokens 1"), std::string::npos) << e.what();
  }
  // A non-square grid needs --from-grid; with it the layout is taken as given.
  PositionTable ns = vit_table(1, {3, 5}, 4, true);
  EXPECT_THROW(vision_layout(ns, k), std::invalid_argument);
  EXPECT_EQ(
      vision_layout(ns, k, {.prefix_tokens = std::nullopt, .from_grid = GridShape{3, 5}}).grid,
      (GridShape{3, 5}));
  EXPECT_THROW(vision_layout(ns, k, {.prefix_tokens = std::nullopt, .from_grid = GridShape{4, 4}}),
               std::invalid_argument);
  // A 1-D table has no grid, whatever the options; an unknown one needs --prefix-tokens.
  EXPECT_THROW(vision_layout(t, classify_table(gpt, "wpe.weight"),
                             {.prefix_tokens = 1, .from_grid = std::nullopt}),
               std::invalid_argument);
  EXPECT_THROW(vision_layout(t, TableClass{}), std::invalid_argument);
  EXPECT_EQ(vision_layout(t, TableClass{}, {.prefix_tokens = 1, .from_grid = std::nullopt}).grid,
            (GridShape{14, 14}));
}

TEST(GridResize, SquareGridForRowsAndGridParsing) {
  const VisionLayout v{1, {14, 14}, ""};
  EXPECT_EQ(square_grid_for_rows(577, v), (GridShape{24, 24}));
  try {
    square_grid_for_rows(578, v);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("577 rows (24x24) or 626 rows (25x25)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse_grid_shape("24x32"), (GridShape{24, 32}));
  for (const char* bad : {"24", "x24", "24x", "0x4", "4x-1", "4x4x4", "99999999x1"}) {
    EXPECT_THROW(parse_grid_shape(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(parse_grid_shape("000024x0032"), (GridShape{24, 32}));
  // A whole number too large is out of range, not "not a whole number"; 00000 is 0.
  for (const char* big : {"1000000x4", "4x18446744073709551617", "65537x1", "00000x4"}) {
    try {
      (void)parse_grid_shape(big);
      ADD_FAILURE() << big << ": no throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("outside [1, 65536]"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_grid_method("bilinear"), GridMethod::bilinear);
  EXPECT_THROW(parse_grid_method("nearest"), std::invalid_argument);
}

TEST(GridResize, RefusesNonFiniteTablesAndBadTargets) {
  PositionTable t = vit_table(1, {2, 2}, 4, true);
  const VisionLayout v{1, {2, 2}, ""};
  EXPECT_THROW(resize_grid(t, v, {0, 3}, GridMethod::bicubic), std::invalid_argument);
  EXPECT_THROW(resize_grid(t, {1, {3, 3}, ""}, {3, 3}, GridMethod::bicubic), std::invalid_argument);
  t.values(3, 1) = std::nanf("");
  EXPECT_THROW(resize_grid(t, v, {3, 3}, GridMethod::bicubic), std::invalid_argument);
}

}  // namespace
}  // namespace posemb
