#include "posemb/initializers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "initializer_kernels.hpp"
#include "posemb/parallel.hpp"
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

void fill(MatrixView<float> table, detail::FillKind kind, std::uint64_t seed, double scale) {
  if (table.cols() == 0) return;  // nothing to write, however many rows
  const detail::FillJob job{table.data(), table.row_stride(), table.cols(), kind, seed, scale};
  const detail::FillRowsFn run = detail::fill_rows();
  const std::size_t rows_per_chunk =
      std::max<std::size_t>(1, (std::size_t{16} << 10) / std::max<std::size_t>(table.cols(), 1));
  parallel_for(table.rows(), rows_per_chunk, table.size(),
               [&](std::size_t r0, std::size_t r1) { run(job, r0, r1); });
}

// counter_normal's largest magnitude: sqrt(-2 ln u1) for the smallest u1, 2^-54 (rounded up).
constexpr double kMaxNormalDraw = 8.66;
constexpr double kMaxNormalStd =
    static_cast<double>(std::numeric_limits<float>::max()) / kMaxNormalDraw;

[[noreturn]] void refuse_kind(const char* op, InitKind kind) {
  throw std::invalid_argument(std::string(op) + ": initializer kind " +
                              std::to_string(static_cast<int>(kind)) +
                              " is no listed InitKind (normal, scaled_normal, glorot_uniform, "
                              "zeros, sinusoidal)");
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
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
  refuse_kind("Initializer::name", kind);
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
      // Every draw is at most kMaxNormalDraw standard deviations out: past kMaxNormalStd some
      // values would be infinite in float.
      if (init.stddev > kMaxNormalStd) {
        throw std::invalid_argument("initialize_table: normal initializer std " + num(init.stddev) +
                                    " is more than " + num(kMaxNormalStd) +
                                    ", past which its values (up to " + num(kMaxNormalDraw) +
                                    " std) are not finite in float");
      }
      fill(table, detail::FillKind::normal, seed, init.stddev);
      break;
    }
    case InitKind::scaled_normal: {
      const double s = table.cols() == 0 ? 0.0 : 1.0 / std::sqrt(double(table.cols()));
      fill(table, detail::FillKind::normal, seed, s);
      break;
    }
    case InitKind::glorot_uniform: {
      const double fan = static_cast<double>(table.rows() + table.cols());
      const double a = fan == 0.0 ? 0.0 : std::sqrt(6.0 / fan);
      fill(table, detail::FillKind::uniform, seed, a);
      break;
    }
    case InitKind::zeros:
      fill(table, detail::FillKind::zeros, seed, 0.0);
      break;
    case InitKind::sinusoidal:
      sinusoidal_positional_encoding_into(table, 0);
      break;
    default:
      refuse_kind("initialize_table", init.kind);
  }
}

}  // namespace posemb
