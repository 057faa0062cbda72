// posemb/optimizers.hpp: AdamW and SGD with momentum on any list of parameters.
//
//   posemb::AdamW opt({.lr = 3e-4f, .weight_decay = 0.1f});
//   std::vector<posemb::ParamRef> params{{wpe, dwpe}, {wte, dwte}};   // named matrices
//   for (...) { /* forward, backward into dwpe, dwte */ opt.step(params); zero_grad(dwpe); ... }
//   opt.step({layer.parameter(), {wte, dwte}});                        // a list in place works too
//   opt.step(params, 0, 100);   // a step on elements [0, 100) of wpe then wte, end to end
//
// Both follow PyTorch's update rules (torch.optim.AdamW and torch.optim.SGD with
// dampening 0, nesterov off). Updates are elementwise, so the result does not depend on the
// thread count. Every check happens before any parameter or state is written.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// A read-only view of a gradient: a MatrixView<const float> that, like the mutable view of
// ParamRef::value, cannot be made from a temporary Matrix (it would dangle once the statement
// that made it ends, and the optimizer would read freed memory). Named matrices and views pass.
class GradView : public MatrixView<const float> {
 public:
  GradView() noexcept = default;
  GradView(MatrixView<const float> v) noexcept : MatrixView<const float>(v) {}       // NOLINT
  GradView(MatrixView<float> v) noexcept : MatrixView<const float>(v) {}             // NOLINT
  GradView(const Matrix<float>& m) noexcept : MatrixView<const float>(m.cview()) {}  // NOLINT
  GradView(Matrix<float>&&) = delete;
  GradView(const Matrix<float>&&) = delete;
};

// A parameter and its gradient, the same shape. Both are views: a temporary Matrix (a
// function's return value) is refused for either at compile time.
struct ParamRef {
  MatrixView<float> value;  // (rows, cols), updated in place
  GradView grad;            // (rows, cols)
};

struct AdamWConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};

class AdamW {
 public:
  // Throws std::invalid_argument for lr < 0, betas outside [0, 1), eps <= 0, weight_decay < 0
  // or any non-finite value.
  explicit AdamW(AdamWConfig cfg = {});
  // Every step checks the configuration again (it may have been changed through config())
  // with the constructor's message, and throws std::overflow_error when the step count is
  // already INT64_MAX; both before anything is written.
  // One step on params (the same list, same order and shapes, every call; throws
  // std::invalid_argument otherwise). Decoupled weight decay, bias correction:
  //   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
  //   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
  void step(std::span<const ParamRef> params);
  // The same for a list written in place: opt.step({pe.parameter(), {wte, dwte}}).
  void step(std::initializer_list<ParamRef> params);
  // One step on a part of params: elements [begin, end) of their concatenation (the parameters
  // in list order, each one's elements row by row; 0 <= begin <= end <= the total). Each of
  // those elements, with its two moments, gets exactly the bits step(params) gives it; every
  // other element and moment is left as it is. Counts as one step, like step(params), so
  // callers whose ranges tile the parameters (the ranks of a data-parallel job, each updating
  // its share; lab/ranks/gradient_exchange.hpp) hold together what one step(params) computes:
  //   opt.step(params, 0, half);   other.step(params, half, total);   // the two halves
  // Throws std::invalid_argument, writing nothing, for a range past the total or as step().
  void step(std::span<const ParamRef> params, std::size_t begin, std::size_t end);
  std::int64_t steps() const noexcept { return steps_; }
  // State for checkpoints: first and second moments per parameter, in params order.
  std::vector<Matrix<float>>& first_moments() & noexcept { return m_; }
  std::vector<Matrix<float>>& second_moments() & noexcept { return v_; }
  const std::vector<Matrix<float>>& first_moments() const& noexcept { return m_; }
  const std::vector<Matrix<float>>& second_moments() const& noexcept { return v_; }
  // References into a temporary optimizer would dangle at the end of the statement.
  void first_moments() const&& = delete;
  void second_moments() const&& = delete;
  void config() const&& = delete;
  // Sets the step count (for resuming from a checkpoint); throws for t < 0.
  void set_steps(std::int64_t t);
  // The configuration, to change between steps (a learning-rate schedule); the next step
  // refuses a value the constructor would refuse.
  AdamWConfig& config() & noexcept { return cfg_; }

 private:
  AdamWConfig cfg_;
  std::int64_t steps_ = 0;
  std::vector<Matrix<float>> m_;
  std::vector<Matrix<float>> v_;
};

struct SgdConfig {
  float lr = 1e-2f, momentum = 0.9f, weight_decay = 0.0f;
};

class Sgd {
 public:
  // Throws std::invalid_argument for lr < 0, momentum outside [0, 1), weight_decay < 0 or any
  // non-finite value.
  explicit Sgd(SgdConfig cfg = {});
  // One step: g' = g + wd p;  buf = momentum buf + g';  p -= lr buf. Same list every call.
  // Checks the configuration again first, as AdamW::step does.
  void step(std::span<const ParamRef> params);
  // The same for a list written in place: opt.step({{w, dw}}).
  void step(std::initializer_list<ParamRef> params);
  std::int64_t steps() const noexcept { return steps_; }
  // Momentum buffers per parameter, in params order.
  std::vector<Matrix<float>>& velocities() & noexcept { return velocity_; }
  void velocities() const&& = delete;  // a reference into a temporary would dangle
  // The configuration, to change between steps; the next step refuses a value the constructor
  // would refuse.
  SgdConfig& config() & noexcept { return cfg_; }
  void config() const&& = delete;

 private:
  SgdConfig cfg_;
  std::int64_t steps_ = 0;
  std::vector<Matrix<float>> velocity_;
};

// Sets every element of grad to zero (written over).
void zero_grad(MatrixView<float> grad);  // (rows, cols)

}  // namespace posemb
