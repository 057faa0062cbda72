// LearnedPositionalEmbedding and the initializers: statistics, determinism across thread
// counts, the core view, forward/backward through the layer, row bookkeeping, the pretrained
// table, and what must not compile (the table cannot be swapped; no view of a temporary).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "embed_reference.hpp"
#include "layer_fixtures.hpp"

namespace posemb {
namespace {

using testing::bytes_of;

struct Moments {
  double mean = 0, var = 0, min = 1e300, max = -1e300;
};
Moments moments(const Matrix<float>& m) {
  Moments s;
  for (float v : m.flat()) {
    s.mean += v;
    s.min = std::min(s.min, double(v));
    s.max = std::max(s.max, double(v));
  }
  s.mean /= double(m.size());
  for (float v : m.flat()) s.var += (v - s.mean) * (v - s.mean);
  s.var /= double(m.size() - 1);
  return s;
}

// n = 256 * 96 = 24576 samples: the sample mean has standard error sd / sqrt(n) ~ sd / 157 and
// the sample sd relative standard error ~ 1 / sqrt(2n) ~ 0.45%. Bounds: 5 standard errors.
TEST(Initializers, StatisticsMatchTheirDistributions) {
  const std::size_t R = 256, C = 96;
  const double n = double(R * C);
  struct Case {
    Initializer init;
    double sd;
  } cases[] = {{{InitKind::normal, 0.02, 1}, 0.02},
               {{InitKind::normal, 1.5, 2}, 1.5},
               {{InitKind::scaled_normal, 0.0, 3}, 1.0 / std::sqrt(double(C))},
               {{InitKind::glorot_uniform, 0.0, 4}, std::sqrt(6.0 / (R + C)) / std::sqrt(3.0)}};
  for (const auto& k : cases) {
    SCOPED_TRACE(k.init.name());
    Matrix<float> t(R, C);
    initialize_table(t.view(), k.init);
    const Moments s = moments(t);
    EXPECT_NEAR(s.mean, 0.0, 5 * k.sd / std::sqrt(n));
    EXPECT_NEAR(std::sqrt(s.var), k.sd, 5 * k.sd / std::sqrt(2 * n));
    if (k.init.kind == InitKind::glorot_uniform) {
      const double a = std::sqrt(6.0 / (R + C));
      EXPECT_LE(s.max, a);
      EXPECT_GE(s.min, -a);
      EXPECT_GT(s.max, 0.99 * a);
    }
  }
  Matrix<float> z = testing::random_matrix(R, C, 5);
  initialize_table(z.view(), {InitKind::zeros, 0.0, 0});
  EXPECT_EQ(bytes_of(z), bytes_of(Matrix<float>(R, C)));
  Matrix<float> s(R, C);
  initialize_table(s.view(), {InitKind::sinusoidal, 0.0, 0});
  EXPECT_EQ(bytes_of(s), bytes_of(sinusoidal_positional_encoding(R, C)));
}

TEST(Initializers, DeterministicForASeedWhateverTheThreadCount) {
  for (auto kind : {InitKind::normal, InitKind::scaled_normal, InitKind::glorot_uniform}) {
    Matrix<float> a(700, 130), b(700, 130), c(700, 130);
    omp_set_num_threads(1);
    initialize_table(a.view(), {kind, 0.02, 99});
    omp_set_num_threads(2);
    initialize_table(b.view(), {kind, 0.02, 99});
    initialize_table(c.view(), {kind, 0.02, 100});
    EXPECT_EQ(bytes_of(a), bytes_of(b));
    EXPECT_NE(bytes_of(a), bytes_of(c));
  }
}

TEST(Initializers, ParseAndName) {
  for (std::string n : {"normal", "scaled-normal", "glorot-uniform", "zeros", "sinusoidal"}) {
    const auto init = Initializer::parse(n, 0.5, 7);
    EXPECT_EQ(init.name(), n);
    EXPECT_EQ(init.seed, 7u);
    EXPECT_EQ(init.stddev, 0.5);
  }
  try {
    (void)Initializer::parse("xavier");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("glorot-uniform"), std::string::npos) << e.what();
  }
  Matrix<float> t(2, 2);
  EXPECT_THROW(initialize_table(t.view(), {InitKind::normal, -1.0, 0}), std::invalid_argument);
  EXPECT_THROW(initialize_table(t.view(), {InitKind::normal, NAN, 0}), std::invalid_argument);
}

// A std so large that some draws (up to 8.66 std out) are infinite in float is refused, naming
// it (std 1e300 gave table(0, 0) = inf); the largest accepted one gives finite values.
TEST(Initializers, StdThatGivesNonFiniteFloatsIsRefused) {
  for (const double sd : {1e300, 1e38, 4e37}) {
    try {
      LearnedPositionalEmbedding pe(4, 4, {.kind = InitKind::normal, .stddev = sd});
      ADD_FAILURE() << "no exception for std " << sd;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("std"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("e+"), std::string::npos) << e.what();
    }
  }
  Matrix<float> t(64, 64);
  initialize_table(t, {.kind = InitKind::normal, .stddev = 3.9e37, .seed = 1});
  for (const float v : t.flat()) ASSERT_TRUE(std::isfinite(v)) << v;
}

// A kind outside the enum was silently zeros, named "unknown".
TEST(Initializers, AnUnlistedKindIsRefusedNamingIt) {
  const Initializer bad{.kind = static_cast<InitKind>(42)};
  Matrix<float> t(2, 2);
  t(0, 0) = 5;
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { initialize_table(t, bad); }, [&] { (void)bad.name(); },
           [&] { LearnedPositionalEmbedding pe(4, 4, bad); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("kind 42"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(t(0, 0), 5.0f);  // nothing written
}

// A table without columns has nothing to fill, however many rows it claims (this looped).
TEST(Initializers, NoColumnsReturnAtOnce) {
  for (const std::size_t rows : {std::size_t{1} << 40, SIZE_MAX}) {
    for (const InitKind k : {InitKind::normal, InitKind::scaled_normal, InitKind::glorot_uniform,
                             InitKind::zeros, InitKind::sinusoidal}) {
      initialize_table(MatrixView<float>(nullptr, rows, 0), {.kind = k});
    }
  }
}

TEST(Layer, OwnsTableAndGradientAndForwardIsTheCoreView) {
  LearnedPositionalEmbedding layer(16, 8);
  EXPECT_EQ(layer.max_seq_len(), 16u);
  EXPECT_EQ(layer.embed_dim(), 8u);
  Matrix<float> expected(16, 8);
  initialize_table(expected.view(), Initializer{});  // default: normal 0.02, seed 0
  EXPECT_EQ(bytes_of(layer.table()), bytes_of(expected));
  EXPECT_EQ(bytes_of(layer.grad()), bytes_of(Matrix<float>(16, 8)));
  const auto v = layer.forward(5, 3);
  EXPECT_EQ(v.data(), layer.table().data() + 3 * 8);
  EXPECT_EQ(v.rows(), 5u);
  EXPECT_THROW(LearnedPositionalEmbedding(0, 8), std::invalid_argument);
  EXPECT_THROW(LearnedPositionalEmbedding(8, 0), std::invalid_argument);
}

TEST(Layer, ForwardAddAndBackwardAddMatchTheReference) {
  const std::size_t B = 4, T = 12, C = 9, maxT = 16;
  for (auto kind : testing::kAllSources) {
    LearnedPositionalEmbedding layer(maxT, C, {InitKind::glorot_uniform, 0, 5});
    const auto batch = testing::make_batch(kind, B, T, 5, maxT, 17);
    const auto pos = resolve_positions(batch.source(), batch.tokens, maxT);
    Matrix<float> x = testing::random_matrix(B * T, C, 1), xr = x;
    layer.forward_add(x.view(), B, T, batch.source());
    reference::add_positions_forward(xr.view(), pos.data(), layer.table());
    EXPECT_EQ(bytes_of(x), bytes_of(xr));
    const auto dx = testing::random_matrix(B * T, C, 2);
    Matrix<float> gr(maxT, C);
    layer.backward_add(dx, B, T, batch.source());
    layer.backward_add(dx, B, T, batch.source());
    reference::add_positions_backward(gr.view(), dx, pos.data());
    reference::add_positions_backward(gr.view(), dx, pos.data());
    EXPECT_EQ(bytes_of(layer.grad()), bytes_of(gr));
    layer.zero_grad();
    EXPECT_EQ(bytes_of(layer.grad()), bytes_of(Matrix<float>(maxT, C)));
  }
}

TEST(Layer, RecordsWhichRowsEverReceivedAGradient) {
  const std::size_t C = 4, maxT = 10;
  LearnedPositionalEmbedding layer(maxT, C);
  EXPECT_EQ(layer.untrained_rows().size(), maxT);
  const auto dx = testing::random_matrix(2 * 3, C, 1);
  layer.backward_add(dx, 2, 3, PositionSource::contiguous(2));  // rows 2, 3, 4
  EXPECT_EQ(layer.untrained_rows(), (std::vector<std::size_t>{0, 1, 5, 6, 7, 8, 9}));
  layer.zero_grad();  // the record survives zero_grad
  Matrix<std::uint8_t> mask(2, 3);
  mask(0, 2) = 1;  // one real token in row 0 -> position 0; row 1 all pads
  layer.backward_add(dx, 2, 3, PositionSource::padding_mask(mask));
  EXPECT_EQ(layer.untrained_rows(), (std::vector<std::size_t>{1, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(layer.row_trained(0));
  EXPECT_FALSE(layer.row_trained(9));
  EXPECT_THROW((void)layer.row_trained(10), std::out_of_range);
  // forward does not count as training
  Matrix<float> x(2 * 3, C);
  layer.forward_add(x.view(), 2, 3, PositionSource::contiguous(7));
  EXPECT_FALSE(layer.row_trained(8));
}

// --- the table cannot be swapped, and no view outlives the layer ---------------------------

using Layer = LearnedPositionalEmbedding;
// `layer.table() = Matrix<float>(32, 4)` replaced the table of a (1024, 768) layer while its
// gradient kept the old shape: the next backward wrote past the end (heap corruption). Now
// table() and grad() are views, and assigning to them does not compile.
static_assert(!std::is_assignable_v<decltype(std::declval<Layer&>().table()), Matrix<float>>);
static_assert(
    !std::is_assignable_v<decltype(std::declval<Layer&>().table()), const Matrix<float>&>);
static_assert(!std::is_assignable_v<decltype(std::declval<Layer&>().grad()), Matrix<float>>);
static_assert(!std::is_assignable_v<decltype(std::declval<Layer&>().table()), MatrixView<float>>);
// Views of a temporary layer would dangle at the end of the statement.
template <class L>
concept TableOf = requires(L&& l) {
  std::forward<L>(l).table();
};
template <class L>
concept ForwardOf = requires(L&& l) {
  std::forward<L>(l).forward(1);
};
template <class L>
concept ParameterOf = requires(L&& l) {
  std::forward<L>(l).parameter();
};
static_assert(TableOf<Layer&> && TableOf<const Layer&> && !TableOf<Layer>);
static_assert(ForwardOf<Layer&> && ForwardOf<const Layer&> && !ForwardOf<Layer>);
static_assert(ParameterOf<Layer&> && !ParameterOf<Layer>);
// ... and of a const temporary (`const LearnedPositionalEmbedding make_layer();`).
static_assert(!TableOf<const Layer> && !ForwardOf<const Layer> && !ParameterOf<const Layer>);
template <class L>
concept GradOf = requires(L&& l) {
  std::forward<L>(l).grad();
};
static_assert(GradOf<Layer&> && GradOf<const Layer&> && !GradOf<Layer> && !GradOf<const Layer>);

TEST(Layer, PretrainedTableIsTakenOverWithoutACopy) {
  Matrix<float> t = testing::random_matrix(6, 3, 1);
  const float* data = t.data();
  const auto bytes = bytes_of(t);
  LearnedPositionalEmbedding layer(std::move(t));
  EXPECT_EQ(layer.table().data(), data);
  EXPECT_EQ(bytes_of(layer.table()), bytes);
  EXPECT_EQ(layer.max_seq_len(), 6u);
  EXPECT_EQ(layer.embed_dim(), 3u);
  EXPECT_EQ(bytes_of(layer.grad()), bytes_of(Matrix<float>(6, 3)));
  EXPECT_EQ(layer.untrained_rows().size(), 6u);
}

TEST(Layer, PretrainedTableWithNaNOrInfinityOrNoElementsIsRefused) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    Matrix<float> t = testing::random_matrix(6, 3, 2);
    t(4, 1) = bad;
    try {
      LearnedPositionalEmbedding layer(std::move(t));
      ADD_FAILURE() << "no exception for " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("row 4, column 1"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(LearnedPositionalEmbedding(Matrix<float>(0, 3)), std::invalid_argument);
  EXPECT_THROW(LearnedPositionalEmbedding(Matrix<float>(3, 0)), std::invalid_argument);
  EXPECT_THROW(LearnedPositionalEmbedding(Matrix<float>()), std::invalid_argument);
}

// docs/layer.md: the gradient counts however it reached grad(), embed_backward included; it is
// recorded at zero_grad() and seen at query time before that.
TEST(Layer, RowsTrainedThroughEmbedBackwardAreSeenAtQueryAndAfterZeroGrad) {
  const std::size_t B = 2, T = 3, C = 4, V = 5, maxT = 10;
  LearnedPositionalEmbedding pe(maxT, C);
  Matrix<float> dwte(V, C);
  const auto tokens = testing::random_tokens(B, T, V, 3);
  const auto dx = testing::random_matrix(B * T, C, 4);
  embed_backward(dwte, pe.grad(), dx, tokens, PositionSource::contiguous(2));  // rows 2, 3, 4
  // At query time, before any zero_grad:
  EXPECT_TRUE(pe.row_trained(2));
  EXPECT_TRUE(pe.row_trained(4));
  EXPECT_FALSE(pe.row_trained(5));
  const std::vector<std::size_t> untrained{0, 1, 5, 6, 7, 8, 9};
  EXPECT_EQ(pe.untrained_rows(), untrained);
  pe.zero_grad();
  EXPECT_EQ(bytes_of(pe.grad()), bytes_of(Matrix<float>(maxT, C)));
  EXPECT_EQ(pe.untrained_rows(), untrained);  // recorded by zero_grad
  EXPECT_TRUE(pe.row_trained(3));
}

// A named Matrix passes wherever an output view is expected (embed_forward's out,
// initialize_table's table), and the result is the same as through .view().
TEST(Layer, NamedMatricesPassAsOutputs) {
  const std::size_t B = 2, T = 3, C = 4, V = 5, maxT = 8;
  Matrix<float> wpe(maxT, C), wpe_view(maxT, C);
  initialize_table(wpe, {});
  initialize_table(wpe_view.view(), Initializer{});
  EXPECT_EQ(bytes_of(wpe), bytes_of(wpe_view));
  EXPECT_NE(bytes_of(wpe), bytes_of(Matrix<float>(maxT, C)));
  const auto wte = testing::random_matrix(V, C, 5);
  const auto tokens = testing::random_tokens(B, T, V, 6);
  Matrix<float> out(B * T, C), out_view(B * T, C);
  embed_forward(out, tokens, PositionSource::contiguous(), wte, wpe);
  embed_forward(out_view.view(), tokens, PositionSource::contiguous(), wte, wpe);
  EXPECT_EQ(bytes_of(out), bytes_of(out_view));
  EXPECT_NE(bytes_of(out), bytes_of(Matrix<float>(B * T, C)));
}

// A temporary Matrix cannot be an output: the result would be lost with it.
template <class Out>
concept EmbedForwardInto = requires(Out&& out, const Matrix<TokenId>& tokens,
                                    const Matrix<float>& w) {
  embed_forward(std::forward<Out>(out), tokens, PositionSource::contiguous(), w, w);
};
template <class Table>
concept InitializeInto = requires(Table&& t) {
  initialize_table(std::forward<Table>(t), Initializer{});
};
static_assert(EmbedForwardInto<Matrix<float>&> && EmbedForwardInto<MatrixView<float>>);
static_assert(!EmbedForwardInto<Matrix<float>> && !EmbedForwardInto<const Matrix<float>&>);
static_assert(InitializeInto<Matrix<float>&> && !InitializeInto<Matrix<float>>);

}  // namespace
}  // namespace posemb
