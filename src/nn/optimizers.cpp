#include "posemb/optimizers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/overlap.hpp"
#include "optimizer_kernels.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

std::string shape(std::size_t r, std::size_t c) {
  std::string s = std::to_string(r);
  s += ", ";
  s += std::to_string(c);
  return '(' + s + ')';
}

// Each value matches its gradient's shape and, once the optimizer has state, the state's.
void check_params(const char* op, std::span<const ParamRef> params,
                  const std::vector<Matrix<float>>& state) {
  if (!state.empty()) {
    require(params.size() == state.size(),
            std::string(op) + ": got " + std::to_string(params.size()) +
                " parameters, but the optimizer state holds " + std::to_string(state.size()) +
                " (pass the same list every step)");
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    require(p.value.rows() == p.grad.rows() && p.value.cols() == p.grad.cols(),
            std::string(op) + ": parameter " + std::to_string(i) + " has shape " +
                shape(p.value.rows(), p.value.cols()) + " but its gradient has shape " +
                shape(p.grad.rows(), p.grad.cols()));
    if (!state.empty()) {
      require(state[i].rows() == p.value.rows() && state[i].cols() == p.value.cols(),
              std::string(op) + ": parameter " + std::to_string(i) + " has shape " +
                  shape(p.value.rows(), p.value.cols()) + " but its optimizer state has shape " +
                  shape(state[i].rows(), state[i].cols()) + " (pass the same list every step)");
    }
  }
  // A value is written while every gradient and every other value is read: none may share memory
  // (names are built only for the error).
  for (std::size_t i = 0; i < params.size(); ++i) {
    for (std::size_t j = 0; j < params.size(); ++j) {
      const MatrixView<const float> value = params[i].value;
      if (detail::overlaps(value, params[j].grad)) {
        detail::check_no_overlap(op, ("parameter " + std::to_string(i)).c_str(), value,
                                 ("the gradient of parameter " + std::to_string(j)).c_str(),
                                 params[j].grad);
      }
      if (j > i && detail::overlaps(value, params[j].value)) {
        detail::check_no_overlap(op, ("parameter " + std::to_string(i)).c_str(), value,
                                 ("parameter " + std::to_string(j)).c_str(), params[j].value);
      }
    }
  }
}

std::vector<Matrix<float>> zeros_like(std::span<const ParamRef> params) {
  std::vector<Matrix<float>> out;
  out.reserve(params.size());
  for (const ParamRef& p : params) out.emplace_back(p.value.rows(), p.value.cols());
  return out;
}

// Rows per parallel chunk: about 64 KiB of each array.
std::size_t rows_per_chunk(std::size_t cols) {
  return std::max<std::size_t>(1, (std::size_t{64} << 10) / (std::max<std::size_t>(cols, 1) * 4));
}

bool finite_all(std::initializer_list<float> xs) {
  for (float x : xs) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// The constructor's checks, made again by step(): config() hands out the configuration to
// change between steps, so a value set there is checked before it is used.
void check_config(const AdamWConfig& cfg) {
  require(finite_all({cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}) && cfg.lr >= 0 &&
              cfg.beta1 >= 0 && cfg.beta1 < 1 && cfg.beta2 >= 0 && cfg.beta2 < 1 && cfg.eps > 0 &&
              cfg.weight_decay >= 0,
          "AdamW: invalid configuration lr=" + std::to_string(cfg.lr) +
              " beta1=" + std::to_string(cfg.beta1) + " beta2=" + std::to_string(cfg.beta2) +
              " eps=" + std::to_string(cfg.eps) +
              " weight_decay=" + std::to_string(cfg.weight_decay) +
              " (need lr >= 0, betas in [0, 1), eps > 0, weight_decay >= 0, all finite)");
}

void check_config(const SgdConfig& cfg) {
  require(finite_all({cfg.lr, cfg.momentum, cfg.weight_decay}) && cfg.lr >= 0 &&
              cfg.momentum >= 0 && cfg.momentum < 1 && cfg.weight_decay >= 0,
          "Sgd: invalid configuration lr=" + std::to_string(cfg.lr) + " momentum=" +
              std::to_string(cfg.momentum) + " weight_decay=" + std::to_string(cfg.weight_decay) +
              " (need lr >= 0, momentum in [0, 1), weight_decay >= 0, all finite)");
}

// The step count after one more step; throws std::overflow_error, writing nothing, when the
// count is already the largest std::int64_t (set_steps can set it there).
std::int64_t next_step(const char* op, std::int64_t steps) {
  if (steps == std::numeric_limits<std::int64_t>::max()) {
    throw std::overflow_error(std::string(op) + ": the step count " + std::to_string(steps) +
                              " is the largest std::int64_t; one more step would overflow it");
  }
  return steps + 1;
}

}  // namespace

AdamW::AdamW(AdamWConfig cfg) : cfg_(cfg) {
  check_config(cfg_);
}

void AdamW::set_steps(std::int64_t t) {
  require(t >= 0, "AdamW::set_steps: step count " + std::to_string(t) + " is negative");
  steps_ = t;
}

void AdamW::step(std::span<const ParamRef> params) {
  std::size_t total = 0;
  for (const ParamRef& p : params) total += p.value.size();
  step(params, 0, total);
}

namespace {

// Elements [c0, c1) of row r of a job's parameter, as a job of one row.
detail::AdamWJob part_of_row(const detail::AdamWJob& job, std::size_t r, std::size_t c0,
                             std::size_t c1) {
  detail::AdamWJob part = job;
  part.value += r * job.value_stride + c0;
  part.grad += r * job.grad_stride + c0;
  part.m += r * job.cols + c0;
  part.v += r * job.cols + c0;
  part.cols = c1 - c0;
  return part;
}

// Elements [lo, hi) (row by row) of a job's (rows, cols) parameter: a partial first row, whole
// rows on the threads (as many rows per task as a whole step takes), a partial last row. Each
// element goes through the same kernel, which computes the same bits at any column.
void update_elements(detail::AdamWRowsFn update, const detail::AdamWJob& job, std::size_t rows,
                     std::size_t lo, std::size_t hi) {
  const std::size_t cols = job.cols;
  if (lo >= hi || cols == 0) return;
  std::size_t r0 = lo / cols;
  const std::size_t r1 = hi / cols, c1 = hi % cols;
  if (const std::size_t c0 = lo % cols; c0 != 0) {
    const detail::AdamWJob head = part_of_row(job, r0, c0, r0 == r1 ? c1 : cols);
    update(head, 0, 1);
    if (r0 == r1) return;
    ++r0;
  }
  if (r0 < r1) {
    parallel_for(r1 - r0, rows_per_chunk(cols), (r1 - r0) * cols,
                 [&](std::size_t a, std::size_t b) { update(job, r0 + a, r0 + b); });
  }
  if (c1 != 0 && r1 < rows) {
    const detail::AdamWJob tail = part_of_row(job, r1, 0, c1);
    update(tail, 0, 1);
  }
}

}  // namespace

void AdamW::step(std::span<const ParamRef> params, std::size_t begin, std::size_t end) {
  check_config(cfg_);
  const std::int64_t t = next_step("AdamW::step", steps_);
  check_params("AdamW::step", params, m_);
  require(m_.size() == v_.size(), "AdamW::step: first and second moment lists differ in size");
  for (std::size_t i = 0; i < v_.size(); ++i) {
    require(v_[i].rows() == m_[i].rows() && v_[i].cols() == m_[i].cols(),
            "AdamW::step: moments of parameter " + std::to_string(i) + " differ in shape");
  }
  std::size_t total = 0;
  for (const ParamRef& p : params) total += p.value.size();
  require(begin <= end && end <= total,
          "AdamW::step: elements [" + std::to_string(begin) + ", " + std::to_string(end) +
              ") are not a range of the parameters' " + std::to_string(total) + " elements");
  if (m_.empty()) {
    m_ = zeros_like(params);
    v_ = zeros_like(params);
  }
  const float lr = cfg_.lr, b1 = cfg_.beta1, b2 = cfg_.beta2, eps = cfg_.eps;
  const float decay = 1.0f - cfg_.lr * cfg_.weight_decay;
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(t));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const detail::AdamWRowsFn update = detail::adamw_rows();
  std::size_t at = 0;  // the first element of parameter i in the concatenation
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    const std::size_t n = p.value.size();
    const std::size_t lo = std::clamp(begin, at, at + n) - at;
    const std::size_t hi = std::clamp(end, at, at + n) - at;
    at += n;
    const detail::AdamWJob job{p.value.data(),
                               p.value.row_stride(),
                               p.grad.data(),
                               p.grad.row_stride(),
                               m_[i].data(),
                               v_[i].data(),
                               p.value.cols(),
                               decay,
                               b1,
                               1.0f - b1,
                               b2,
                               1.0f - b2,
                               bc2_sqrt,
                               eps,
                               step_size};
    update_elements(update, job, p.value.rows(), lo, hi);
  }
  steps_ = t;
}

Sgd::Sgd(SgdConfig cfg) : cfg_(cfg) {
  check_config(cfg_);
}

void AdamW::step(std::initializer_list<ParamRef> params) {
  step(std::span<const ParamRef>(params.begin(), params.size()));
}

void Sgd::step(std::initializer_list<ParamRef> params) {
  step(std::span<const ParamRef>(params.begin(), params.size()));
}

void Sgd::step(std::span<const ParamRef> params) {
  check_config(cfg_);
  const std::int64_t t = next_step("Sgd::step", steps_);
  check_params("Sgd::step", params, velocity_);
  if (velocity_.empty()) velocity_ = zeros_like(params);
  const float lr = cfg_.lr, mu = cfg_.momentum, wd = cfg_.weight_decay;
  const detail::SgdRowsFn update = detail::sgd_rows();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    const detail::SgdJob job{p.value.data(),
                             p.value.row_stride(),
                             p.grad.data(),
                             p.grad.row_stride(),
                             velocity_[i].data(),
                             p.value.cols(),
                             lr,
                             mu,
                             wd};
    parallel_for(p.value.rows(), rows_per_chunk(p.value.cols()), p.value.size(),
                 [&](std::size_t r0, std::size_t r1) { update(job, r0, r1); });
  }
  steps_ = t;
}

void zero_grad(MatrixView<float> grad) {
  if (grad.cols() == 0) return;  // nothing to write, however many rows
  for (std::size_t r = 0; r < grad.rows(); ++r) {
    for (float& g : grad.row(r)) g = 0.0f;
  }
}

}  // namespace posemb
