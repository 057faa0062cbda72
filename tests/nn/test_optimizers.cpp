// AdamW and SGD with momentum against torch.optim (float32, tests/oracles/torch_optim.py), and
// their contracts: same list every step, nothing written on a bad call, zero_grad.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
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

// A parameter list of awkward shapes (a strided value, one element, rows longer than a vector,
// no rows, one column) and a copy of it with its own optimizer: one "rank".
struct Replica {
  struct Shape {
    std::size_t rows, cols, stride;
  };
  static inline const std::vector<Shape> shapes = {{5, 13, 17}, {1, 1, 1}, {3, 33, 33},
                                                   {0, 4, 4},   {4, 1, 3}, {2, 8, 8}};
  static constexpr std::size_t total = 65 + 1 + 99 + 0 + 4 + 16;
  std::vector<Matrix<float>> store;  // each (rows, stride)
  AdamW opt{{.lr = 5e-2f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.1f}};

  Replica() {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      store.push_back(testing::random_matrix(shapes[i].rows, shapes[i].stride, 10 + i));
    }
  }
  MatrixView<float> value(std::size_t i) {
    return {store[i].data(), shapes[i].rows, shapes[i].cols, shapes[i].stride};
  }
  std::vector<ParamRef> params(const std::vector<Matrix<float>>& grads) {
    std::vector<ParamRef> out;
    for (std::size_t i = 0; i < shapes.size(); ++i) out.push_back({value(i), grads[i]});
    return out;
  }
  // Element k of the concatenation (row by row) of the values (what 0), first moments (1) or
  // second moments (2).
  float& at(int what, std::size_t k) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::size_t n = shapes[i].rows * shapes[i].cols;
      if (k >= n) {
        k -= n;
        continue;
      }
      if (what == 0) return value(i)(k / shapes[i].cols, k % shapes[i].cols);
      return (what == 1 ? opt.first_moments() : opt.second_moments())[i].data()[k];
    }
    throw std::out_of_range("Replica::at");
  }
  std::vector<float> all(int what) {
    std::vector<float> out;
    for (std::size_t k = 0; k < total; ++k) out.push_back(at(what, k));
    return out;
  }
};

// Ranges that tile the parameters, each stepped on its own replica, then gathered (each element
// from the replica that owns it, as the ranks of lab::Trainer exchange parameters): one step's
// bits, every step. A replica's step leaves every element outside its range as it was.
TEST(AdamW, StepsOverRangesThatTileTheParametersEqualOneStep) {
  const std::size_t T = Replica::total;
  // Cuts inside rows, at row and parameter ends, empty ranges, one element each.
  std::vector<std::vector<std::size_t>> tilings = {
      {0, T}, {0, 7, T}, {0, 65, 66, 165, 165, T}, {0, 3, 3, 70, 71, 140, 184, T}};
  tilings.emplace_back();
  for (std::size_t k = 0; k <= T; ++k) tilings.back().push_back(k);
  for (const auto& cuts : tilings) {
    Replica one;
    std::vector<Replica> ranks(cuts.size() - 1);
    for (std::size_t s = 0; s < 3; ++s) {
      std::vector<Matrix<float>> grads;
      for (std::size_t i = 0; i < Replica::shapes.size(); ++i) {
        grads.push_back(testing::random_matrix(Replica::shapes[i].rows, Replica::shapes[i].cols,
                                               100 * s + i, s == 1 ? 1e-3f : 2.0f));
      }
      one.opt.step(one.params(grads));
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        const int arrays = s == 0 ? 1 : 3;  // the moments exist after the first step
        std::vector<std::vector<float>> before;
        for (int what = 0; what < arrays; ++what) before.push_back(ranks[r].all(what));
        ranks[r].opt.step(ranks[r].params(grads), cuts[r], cuts[r + 1]);
        EXPECT_EQ(ranks[r].opt.steps(), std::int64_t(s + 1));
        for (int what = 0; what < arrays; ++what) {
          const std::vector<float> after = ranks[r].all(what);
          for (std::size_t k = 0; k < T; ++k) {
            if (k < cuts[r] || k >= cuts[r + 1]) {
              ASSERT_EQ(after[k], before[what][k]) << "array " << what << " element " << k;
            }
          }
        }
      }
      // The exchange: element k from the replica whose range holds it.
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        for (std::size_t k = cuts[r]; k < cuts[r + 1]; ++k) {
          for (auto& other : ranks) {
            for (int what = 0; what < 3; ++what) other.at(what, k) = ranks[r].at(what, k);
          }
        }
      }
      for (auto& rank : ranks) {
        for (int what = 0; what < 3; ++what) {
          const auto want = one.all(what), got = rank.all(what);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), T * sizeof(float)), 0)
              << cuts.size() - 1 << " ranges, step " << s + 1 << ", array " << what;
        }
      }
    }
  }
}

TEST(AdamW, RejectsARangeOutsideTheParametersAndWritesNothing) {
  Replica a;
  std::vector<Matrix<float>> grads;
  for (const auto& sh : Replica::shapes)
    grads.push_back(testing::random_matrix(sh.rows, sh.cols, 3));
  const auto params = a.params(grads);
  a.opt.step(params, 0, 10);
  const auto p0 = a.all(0), m0 = a.all(1);
  for (const auto& [b, e] : {std::pair<std::size_t, std::size_t>{5, 4},
                             {0, Replica::total + 1},
                             {Replica::total + 1, Replica::total + 1}}) {
    try {
      a.opt.step(params, b, e);
      ADD_FAILURE() << "[" << b << ", " << e << ") accepted";
    } catch (const std::invalid_argument& err) {
      EXPECT_NE(
          std::string(err.what())
              .find("AdamW::step: elements [" + std::to_string(b) + ", " + std::to_string(e) + ")"),
          std::string::npos)
          << err.what();
    }
  }
  EXPECT_EQ(a.all(0), p0);
  EXPECT_EQ(a.all(1), m0);
  EXPECT_EQ(a.opt.steps(), 1);
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

// A view with no columns has nothing to zero, however many rows it claims (this looped over
// 2^40 rows).
TEST(Optimizers, ZeroGradOfNoColumnsReturnsAtOnce) {
  zero_grad(MatrixView<float>(nullptr, std::size_t{1} << 40, 0));
  zero_grad(MatrixView<float>(nullptr, std::numeric_limits<std::size_t>::max(), 0));
}

// ParamRef's gradient, like its value, cannot be a view of a temporary matrix: AdamW::step read
// it after it was freed (`ParamRef p{w, make_grad()};`).
const auto make_grad = [] { return Matrix<float>(2, 3); };
const auto make_const_grad = []() -> const Matrix<float> { return Matrix<float>(2, 3); };
template <class Make>
concept GradFromCall = requires(Matrix<float>& w, Make make) {
  ParamRef{w, make()};
};
template <class G>
concept GradFrom = requires(Matrix<float>& w, G&& g) {
  ParamRef{w, std::forward<G>(g)};
};
static_assert(!GradFromCall<decltype(make_grad)> && !GradFromCall<decltype(make_const_grad)>);
static_assert(!GradFrom<Matrix<float>> && !GradFrom<const Matrix<float>>);
static_assert(GradFrom<Matrix<float>&> && GradFrom<const Matrix<float>&>);
static_assert(GradFrom<MatrixView<float>> && GradFrom<MatrixView<const float>>);

TEST(Optimizers, GradOfANamedMatrixOrAViewIsTheSameMemory) {
  Matrix<float> w(2, 3), g(2, 3);
  const ParamRef a{w, g};
  const ParamRef b{w.view(), g.cview()};
  EXPECT_EQ(a.grad.data(), g.data());
  EXPECT_EQ(b.grad.data(), g.data());
  EXPECT_EQ(a.grad.rows(), 2u);
  EXPECT_EQ(a.grad.cols(), 3u);
}

// set_steps(INT64_MAX) then a step: the count overflowed (UB), went negative, and the bias
// correction wrote NaN. Now the step is refused before anything is written.
TEST(AdamW, StepPastTheLargestStepCountThrowsAndWritesNothing) {
  Matrix<float> w = testing::random_matrix(3, 4, 1), g = testing::random_matrix(3, 4, 2);
  const Matrix<float> w0 = w;
  AdamW opt;
  opt.set_steps(std::numeric_limits<std::int64_t>::max());
  try {
    opt.step({{w, g}});
    ADD_FAILURE() << "no exception";
  } catch (const std::overflow_error& e) {
    EXPECT_NE(std::string(e.what()).find("AdamW::step"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("9223372036854775807"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bytes_of(w), bytes_of(w0));
  EXPECT_TRUE(opt.first_moments().empty());
  EXPECT_EQ(opt.steps(), std::numeric_limits<std::int64_t>::max());
  opt.set_steps(std::numeric_limits<std::int64_t>::max() - 1);
  opt.step({{w, g}});  // the last step that fits
  EXPECT_EQ(opt.steps(), std::numeric_limits<std::int64_t>::max());
}

// config() hands out the configuration (a learning-rate schedule writes lr there): a value the
// constructor refuses is refused by the next step, with the constructor's message, before any
// write (o.config().lr = NAN made every weight NaN).
template <class Opt, class Cfg>
void expect_step_refuses(void (*spoil)(Cfg&), const std::string& what) {
  Matrix<float> w = testing::random_matrix(3, 4, 1), g = testing::random_matrix(3, 4, 2);
  const Matrix<float> w0 = w;
  Opt opt;
  opt.step({{w, g}});
  const Matrix<float> w1 = w;
  spoil(opt.config());
  try {
    opt.step({{w, g}});
    ADD_FAILURE() << "no exception for " << what;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("invalid configuration"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  EXPECT_EQ(bytes_of(w), bytes_of(w1)) << what;
  EXPECT_EQ(opt.steps(), 1) << what;
}

TEST(Optimizers, StepRevalidatesAConfigurationChangedThroughConfig) {
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.lr = NAN; }, "lr=nan");
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.lr = -1; }, "lr=-1");
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.beta1 = 1; }, "beta1=1");
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.beta2 = 1; }, "beta2=1");
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.eps = 0; }, "eps=0");
  expect_step_refuses<AdamW, AdamWConfig>([](AdamWConfig& c) { c.weight_decay = INFINITY; },
                                          "weight_decay=inf");
  expect_step_refuses<Sgd, SgdConfig>([](SgdConfig& c) { c.lr = NAN; }, "lr=nan");
  expect_step_refuses<Sgd, SgdConfig>([](SgdConfig& c) { c.momentum = 1; }, "momentum=1");
  expect_step_refuses<Sgd, SgdConfig>([](SgdConfig& c) { c.weight_decay = -1; }, "weight_decay=-1");
  // A valid change (a schedule) is taken.
  Matrix<float> w(2, 2), g(2, 2);
  AdamW opt;
  opt.config().lr = 0.5f;
  opt.step({{w, g}});
  EXPECT_EQ(opt.steps(), 1);
}

}  // namespace
}  // namespace posemb
