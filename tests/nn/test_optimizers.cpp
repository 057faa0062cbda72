// AdamW and SGD with momentum against torch.optim (float32, tests/oracles/torch_optim.py), and
// their contracts: same list every step, nothing written on a bad call, zero_grad.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "posemb/posemb.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr std::size_t R = 7, C = 13, kSteps = 5;

// Runs `steps` steps with our optimizer and the torch oracle, comparing after every step.
// Tolerance: the two evaluate the same formulas in float32 in a possibly different order; each
// step's update is within 32 * eps * max(|p|, 1) of the other's (a handful of roundings of
// terms of size <= max(|p|, 1) with lr <= 0.1), and errors accumulate over the steps.
template <class Opt>
void compare_with_torch(Opt& opt, const std::string& oracle_args) {
  Matrix<float> p = testing::random_matrix(R, C, 1);
  testing::TempDir dir;
  testing::write_raw(dir.file("p0.f32"), p);
  Matrix<float> grads = testing::random_matrix(kSteps, R * C, 2, 2.0f);
  testing::write_raw(dir.file("grads.f32"), grads);
  testing::run_oracle("torch_optim.py", dir.file("") + " " + std::to_string(R) + " " +
                                            std::to_string(C) + " " + std::to_string(kSteps) + " " +
                                            oracle_args);
  const auto torch_p = testing::read_raw<float>(dir.file("params.f32"), kSteps, R * C);
  for (std::size_t s = 0; s < kSteps; ++s) {
    MatrixView<const float> g(grads.data() + s * R * C, R, C);
    const ParamRef ref{p.view(), g};
    opt.step({&ref, 1});
    for (std::size_t i = 0; i < R * C; ++i) {
      const double want = torch_p(s, i);
      const double tol = double(s + 1) * 32 * kEps * std::max(std::abs(want), 1.0);
      ASSERT_NEAR(p.data()[i], want, tol) << "step " << s + 1 << " element " << i;
    }
  }
  EXPECT_EQ(opt.steps(), std::int64_t(kSteps));
}

TEST(AdamW, MatchesTorchAdamW) {
  AdamW plain({.lr = 1e-2f});
  compare_with_torch(plain, "adamw 0.01 0.9 0.999 1e-08 0.0");
  AdamW decayed({.lr = 5e-2f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.1f});
  compare_with_torch(decayed, "adamw 0.05 0.8 0.99 1e-06 0.1");
}

TEST(Sgd, MatchesTorchSgdWithMomentum) {
  Sgd sgd({.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f});
  compare_with_torch(sgd, "sgd 0.05 0.9 0.01");
  Sgd plain({.lr = 0.1f, .momentum = 0.0f});
  compare_with_torch(plain, "sgd 0.1 0.0 0.0");
}

TEST(AdamW, FirstStepMovesEachParameterByLrAgainstItsGradientSign) {
  // t = 1: m_hat = g, v_hat = g^2, update = lr * g / (|g| + eps) = lr * sign(g) (to ~eps/|g|).
  Matrix<float> p(2, 3);
  Matrix<float> g(2, 3);
  const float gv[] = {0.5f, -2.0f, 1e-3f, -0.25f, 3.0f, -1.0f};
  for (std::size_t i = 0; i < 6; ++i) g.data()[i] = gv[i];
  AdamW opt({.lr = 0.1f});
  const ParamRef ref{p.view(), g};
  opt.step({&ref, 1});
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(p.data()[i], gv[i] > 0 ? -0.1 : 0.1, 1e-5) << i;
  }
}

TEST(Optimizers, RejectADifferentParameterListAndWriteNothing) {
  Matrix<float> a = testing::random_matrix(3, 4, 1), ga = testing::random_matrix(3, 4, 2);
  Matrix<float> b = testing::random_matrix(2, 2, 3), gb = testing::random_matrix(2, 2, 4);
  AdamW adam;
  Sgd sgd;
  const ParamRef both[] = {{a.view(), ga}, {b.view(), gb}};
  adam.step(both);
  sgd.step(both);
  const auto a0 = bytes_of(a), b0 = bytes_of(b);
  const auto m0 = bytes_of(adam.first_moments()[0]), v0 = bytes_of(sgd.velocities()[1]);
  const ParamRef one[] = {{a.view(), ga}};
  EXPECT_THROW(adam.step(one), std::invalid_argument);
  EXPECT_THROW(sgd.step(one), std::invalid_argument);
  const ParamRef swapped[] = {{b.view(), gb}, {a.view(), ga}};
  EXPECT_THROW(adam.step(swapped), std::invalid_argument);
  EXPECT_THROW(sgd.step(swapped), std::invalid_argument);
  Matrix<float> wrong_grad(3, 5);
  const ParamRef mismatched[] = {{a.view(), wrong_grad}, {b.view(), gb}};
  EXPECT_THROW(adam.step(mismatched), std::invalid_argument);
  EXPECT_EQ(bytes_of(a), a0);
  EXPECT_EQ(bytes_of(b), b0);
  EXPECT_EQ(bytes_of(adam.first_moments()[0]), m0);
  EXPECT_EQ(bytes_of(sgd.velocities()[1]), v0);
  EXPECT_EQ(adam.steps(), 1);
  EXPECT_EQ(sgd.steps(), 1);
  EXPECT_THROW(AdamW({.beta1 = 1.0f}), std::invalid_argument);
  EXPECT_THROW(AdamW({.eps = 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sgd({.lr = -1.0f}), std::invalid_argument);
  EXPECT_THROW(adam.set_steps(-1), std::invalid_argument);
}

// opt.step({p}) and opt.step({p, q}) take a list written in place, and do exactly what the
// span overload does.
template <class Opt>
concept StepsOnABracedList = requires(Opt& opt, ParamRef p) {
  opt.step({p});
  opt.step({p, p});
};
static_assert(StepsOnABracedList<AdamW> && StepsOnABracedList<Sgd>);

template <class Opt>
void expect_braced_list_equals_span() {
  Matrix<float> a = testing::random_matrix(3, 4, 1), ga = testing::random_matrix(3, 4, 2);
  Matrix<float> b = testing::random_matrix(2, 5, 3), gb = testing::random_matrix(2, 5, 4);
  Matrix<float> a2 = a, b2 = b;
  Opt listed, spanned;
  LearnedPositionalEmbedding layer(4, 3);
  for (int step = 0; step < 3; ++step) {
    listed.step({{a, ga}, {b, gb}});
    const std::vector<ParamRef> params{{a2, ga}, {b2, gb}};
    spanned.step(params);
  }
  EXPECT_EQ(bytes_of(a), bytes_of(a2));
  EXPECT_EQ(bytes_of(b), bytes_of(b2));
  Opt one;
  one.step({layer.parameter()});  // a single parameter, as layer.hpp's example writes it
  EXPECT_EQ(one.steps(), 1);
}

TEST(Optimizers, StepTakesABracedListLikeASpan) {
  expect_braced_list_equals_span<AdamW>();
  expect_braced_list_equals_span<Sgd>();
}

TEST(Optimizers, ZeroGrad) {
  Matrix<float> store = testing::random_matrix(4, 6, 1);
  MatrixView<float> g(store.data() + 1, 3, 4, 6);  // strided: the gaps stay
  zero_grad(g);
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t c = 0; c < 6; ++c) {
      const bool inside = r < 3 && c >= 1 && c < 5;
      EXPECT_EQ(store(r, c) == 0.0f, inside) << r << ", " << c;
    }
  }
}

}  // namespace
}  // namespace posemb
