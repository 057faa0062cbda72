#include "posemb/initializers.hpp"

#include <algorithm>
#include <cmath>
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
  }
}

}  // namespace posemb
