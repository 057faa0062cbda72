#include "posemb/initializers.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "posemb/parallel.hpp"
#include "posemb/random.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb {
namespace {

struct NamedKind {
  const char* name;
  InitKind kind;
};
constexpr NamedKind kKinds[] = {{"normal", InitKind::normal},
                                {"scaled-normal", InitKind::scaled_normal},
                                {"glorot-uniform", InitKind::glorot_uniform},
                                {"zeros", InitKind::zeros},
                                {"sinusoidal", InitKind::sinusoidal}};

template <class F>
void fill(MatrixView<float> table, F&& value) {
  const std::size_t cols = table.cols();
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(table.rows());
#pragma omp parallel for schedule(static) if (worth_parallel(table.size()))
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    float* row = table.row(static_cast<std::size_t>(r)).data();
    for (std::size_t c = 0; c < cols; ++c) {
      row[c] = static_cast<float>(value(static_cast<std::size_t>(r) * cols + c));
    }
  }
}

}  // namespace

Initializer Initializer::parse(std::string_view name, double stddev, std::uint64_t seed) {
  for (const auto& nk : kKinds) {
    if (name == nk.name) return Initializer{nk.kind, stddev, seed};
  }
  std::string valid;
  for (const auto& nk : kKinds) valid += std::string(valid.empty() ? "" : ", ") + nk.name;
  throw std::invalid_argument("Initializer::parse: unknown initializer '" + std::string(name) +
                              "'; valid names: " + valid);
}

std::string Initializer::name() const {
  for (const auto& nk : kKinds) {
    if (nk.kind == kind) return nk.name;
  }
  return "unknown";
}

void initialize_table(MatrixView<float> table, const Initializer& init) {
  const std::uint64_t seed = init.seed;
  switch (init.kind) {
    case InitKind::normal: {
      if (!std::isfinite(init.stddev) || init.stddev < 0.0) {
        throw std::invalid_argument(
            "initialize_table: normal initializer needs a finite std >= "
            "0, got " +
            std::to_string(init.stddev));
      }
      const double s = init.stddev;
      fill(table, [=](std::uint64_t k) { return s * counter_normal(seed, k); });
      break;
    }
    case InitKind::scaled_normal: {
      const double s = table.cols() == 0 ? 0.0 : 1.0 / std::sqrt(double(table.cols()));
      fill(table, [=](std::uint64_t k) { return s * counter_normal(seed, k); });
      break;
    }
    case InitKind::glorot_uniform: {
      const double fan = static_cast<double>(table.rows() + table.cols());
      const double a = fan == 0.0 ? 0.0 : std::sqrt(6.0 / fan);
      fill(table, [=](std::uint64_t k) { return a * (2.0 * counter_uniform01(seed, 3, k) - 1.0); });
      break;
    }
    case InitKind::zeros:
      fill(table, [](std::uint64_t) { return 0.0; });
      break;
    case InitKind::sinusoidal:
      sinusoidal_positional_encoding_into(table, 0);
      break;
  }
}

}  // namespace posemb
