// Outputs that share memory with inputs (or with other outputs): every entry point that writes
// one view while using another refuses the pair before it writes anything, and accepts views of
// one matrix that share no element (the left and right halves), computing what separate copies
// give, bit for bit.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "posemb/posemb.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

constexpr std::size_t B = 2, T = 3, C = 4, V = 5, maxT = 6;

// Calls f, which must throw std::invalid_argument saying "overlaps" and naming op; `arena` must
// be byte for byte what it was.
void expect_refused(const char* op, const Matrix<float>& arena, const std::function<void()>& f) {
  const auto before = bytes_of(arena);
  try {
    f();
    ADD_FAILURE() << op << ": no error";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find("overlaps"), std::string::npos) << msg;
  }
  EXPECT_EQ(bytes_of(arena), before) << op << " wrote before refusing";
}

Matrix<TokenId> tokens() {
  Matrix<TokenId> t(B, T);
  for (std::size_t i = 0; i < B * T; ++i) t.flat()[i] = static_cast<TokenId>((i * 3) % V);
  return t;
}

// One arena of 24 rows x C holds every buffer, so that any view may alias any other.
TEST(Aliasing, EmbeddingOperationsRefuseOverlappingViews) {
  Matrix<float> arena = random_matrix(24, C, 1);
  const auto tk = tokens();
  const auto src = PositionSource::contiguous(0);
  auto rows = [&](std::size_t first, std::size_t n) { return arena.view().subrows(first, n); };
  // wte rows 0..4, wpe rows 5..10; out (6 rows) shifted onto them.
  const MatrixView<const float> wte = rows(0, V), wpe = rows(5, maxT);
  expect_refused("embed_forward", arena, [&] { embed_forward(rows(3, B * T), tk, src, wte, wpe); });
  expect_refused("embed_forward", arena,
                 [&] { embed_forward(rows(10, B * T), tk, src, wte, wpe); });
  expect_refused("embed_forward", arena, [&] { embed_forward(rows(4, B * T), tk, wte); });
  expect_refused("add_positions_forward", arena,
                 [&] { add_positions_forward(rows(0, B * T), B, T, src, wpe); });
  // Backward: dwte rows 0..4, dwpe 5..10, dout 11..16; each pair made to meet.
  const MatrixView<const float> dout = rows(11, B * T);
  expect_refused("embed_backward", arena,
                 [&] { embed_backward(rows(0, V), rows(4, maxT), dout, tk, src); });
  expect_refused("embed_backward", arena,
                 [&] { embed_backward(rows(7, V), rows(0, maxT), dout, tk, src); });
  expect_refused("embed_backward", arena,
                 [&] { embed_backward(rows(0, V), rows(10, maxT), dout, tk, src); });
  expect_refused("embed_backward", arena, [&] { embed_backward(rows(12, V), dout, tk); });
  expect_refused("add_positions_backward", arena,
                 [&] { add_positions_backward(rows(9, maxT), dout, B, T, src); });
}

TEST(Aliasing, DisjointHalvesOfOneMatrixComputeAsSeparateCopies) {
  // Left half: the inputs (wte then wpe rows); right half: the outputs. Same stride, no shared
  // element.
  Matrix<float> arena = random_matrix(V + maxT, 2 * C, 2);
  const auto tk = tokens();
  const auto src = PositionSource::contiguous(1);
  const MatrixView<float> left = arena.view().subcols(0, C), right = arena.view().subcols(C, C);
  const MatrixView<const float> wte = left.subrows(0, V), wpe = left.subrows(V, maxT);
  const Matrix<float> wte_copy(wte), wpe_copy(wpe);
  Matrix<float> expected(B * T, C);
  embed_forward(expected.view(), tk, src, wte_copy, wpe_copy);
  const MatrixView<float> out = right.subrows(0, B * T);
  embed_forward(out, tk, src, wte, wpe);
  EXPECT_EQ(bytes_of(out), bytes_of(expected));
}

TEST(Aliasing, TheLayerRefusesViewsOfItsOwnTableAndGradient) {
  LearnedPositionalEmbedding pe(B * T + 2, C, Initializer::parse("normal", 0.02, 3));
  const auto src = PositionSource::contiguous(0);
  const Matrix<float> table_before(pe.table()), grad_before(pe.grad());
  for (const std::size_t first : {0u, 1u, 2u}) {
    try {
      pe.forward_add(pe.table().subrows(first, B * T), B, T, src);
      ADD_FAILURE() << "forward_add on its own table";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("forward_add: x (6 x 4) overlaps the layer's table"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(pe.backward_add(pe.grad().subrows(first, B * T), B, T, src),
                 std::invalid_argument);
  }
  EXPECT_EQ(bytes_of(pe.table()), bytes_of(table_before));
  EXPECT_EQ(bytes_of(pe.grad()), bytes_of(grad_before));
  // The gradient as the activation of forward_add, and the table as backward_add's: allowed.
  Matrix<float> x = random_matrix(B * T, C, 4);
  pe.backward_add(x, B, T, src);
  EXPECT_NO_THROW(pe.forward_add(pe.grad().subrows(0, B * T), B, T, src));
}

TEST(Aliasing, OptimizersRefuseAValueThatSharesMemoryWithAGradientOrAnotherValue) {
  Matrix<float> arena = random_matrix(12, C, 5);
  const auto before = bytes_of(arena);
  auto rows = [&](std::size_t first, std::size_t n) { return arena.view().subrows(first, n); };
  AdamW adam;
  Sgd sgd;
  const std::vector<std::vector<ParamRef>> bad = {
      {{rows(0, 4), rows(0, 4)}},                             // its own gradient
      {{rows(0, 4), rows(8, 4)}, {rows(4, 4), rows(2, 4)}},   // another's gradient
      {{rows(0, 4), rows(8, 4)}, {rows(3, 2), rows(6, 2)}}};  // another value
  for (const auto& params : bad) {
    EXPECT_THROW(adam.step(params), std::invalid_argument);
    EXPECT_THROW(sgd.step(params), std::invalid_argument);
    EXPECT_EQ(bytes_of(arena), before);
  }
  // Values and gradients apart: a step runs.
  EXPECT_NO_THROW(sgd.step({{rows(0, 4), rows(4, 4)}, {rows(8, 2), rows(10, 2)}}));
  EXPECT_NE(bytes_of(arena), before);
}

}  // namespace
}  // namespace posemb
