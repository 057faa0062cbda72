#include "posemb/resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "posemb/errors.hpp"
#include "posemb/initializers.hpp"
#include "posemb/memory.hpp"
#include "table_checks.hpp"

namespace posemb {
namespace {

std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string table_label(const PositionTable& t) {
  if (t.source_file.empty()) return "the table";
  return "the table from " + quote_untrusted(t.source_file) + " (tensor " +
         quote_untrusted(t.source_tensor) + ")";
}

}  // namespace

std::string_view resize_method_name(ResizeMethod method) noexcept {
  switch (method) {
    case ResizeMethod::copy:
      return "copy";
    case ResizeMethod::interpolate:
      return "interpolate";
    case ResizeMethod::random:
      return "random";
    case ResizeMethod::truncate:
      return "truncate";
  }
  return "?";
}

ResizeMethod parse_resize_method(std::string_view name) {
  for (auto m : {ResizeMethod::copy, ResizeMethod::interpolate, ResizeMethod::random,
                 ResizeMethod::truncate}) {
    if (resize_method_name(m) == name) return m;
  }
  throw std::invalid_argument("parse_resize_method: unknown method " + quote_untrusted(name) +
                              " (expected copy, interpolate, random or truncate)");
}

PositionTable resize_table(const PositionTable& table, std::size_t new_positions,
                           ResizeMethod method, const ResizeOptions& options) {
  const std::size_t reserved = table.reserved_rows;
  const std::size_t rows = table.values.rows();
  const std::size_t dim = table.values.cols();
  const std::string name(resize_method_name(method));
  if (reserved > rows) {
    throw std::invalid_argument("resize_table: reserved_rows " + std::to_string(reserved) +
                                " exceeds the table's " + std::to_string(rows) + " rows");
  }
  if (dim == 0) {
    throw std::invalid_argument("resize_table: " + table_label(table) + " has " +
                                std::to_string(rows) + " rows of 0 columns; a position table " +
                                "needs at least one column");
  }
  const std::size_t old_n = rows - reserved;
  if (new_positions == 0) throw std::invalid_argument("resize_table: new_positions is 0");
  if (method == ResizeMethod::truncate && new_positions > old_n) {
    throw std::invalid_argument("resize_table: truncate shrinks, but " +
                                std::to_string(new_positions) + " positions > the table's " +
                                std::to_string(old_n) + "; grow with copy, interpolate or random");
  }
  if (method != ResizeMethod::truncate && new_positions < old_n) {
    throw std::invalid_argument("resize_table: " + name + " grows, but " +
                                std::to_string(new_positions) + " positions < the table's " +
                                std::to_string(old_n) + "; shrink with truncate");
  }
  if (old_n == 0 && method != ResizeMethod::random) {
    throw std::invalid_argument("resize_table: the table has no positions to " + name + " from");
  }
  if (new_positions > (std::size_t{1} << 32)) {
    throw std::invalid_argument("resize_table: " + std::to_string(new_positions) +
                                " positions is more than 2^32");
  }
  if (method == ResizeMethod::random) {
    (void)Initializer::parse(options.initializer);  // throws, listing the valid names
    // The rows are floats: the standard deviation must be a positive finite float too.
    const auto s = static_cast<float>(options.stddev);
    if (!(options.stddev > 0.0) || !std::isfinite(s) || s == 0.0f) {
      throw std::invalid_argument("resize_table: stddev " + fmt_double(options.stddev) +
                                  " is not a positive finite float (at most " +
                                  fmt_double(std::numeric_limits<float>::max()) + ", at least " +
                                  fmt_double(std::numeric_limits<float>::denorm_min()) + ")");
    }
  }
  if (const std::string bad = detail::non_finite_description(table.values); !bad.empty()) {
    throw std::invalid_argument("resize_table: " + table_label(table) + " holds " + bad +
                                "; refusing to resize a damaged table");
  }
  // The result, and for `random` the freshly drawn table, before any allocation.
  const std::size_t row_bytes = saturating_mul(dim, sizeof(float));
  const std::size_t result_rows = saturating_add(reserved, new_positions);
  check_allocation(
      "resize_table",
      saturating_mul(
          saturating_add(result_rows, method == ResizeMethod::random ? new_positions : 0),
          row_bytes));

  PositionTable out;
  out.values = Matrix<float>(reserved + new_positions, dim);  // (reserved + new_positions, dim)
  out.reserved_rows = reserved;
  out.training_length = table.training_length;
  out.initializer = table.initializer;
  out.source_tensor = table.source_tensor;
  out.dtype = table.dtype;
  out.how_found = table.how_found;
  const auto& src = table.values;
  auto& dst = out.values;
  auto copy_row = [&](std::size_t to, std::size_t from) {
    for (std::size_t c = 0; c < dim; ++c) dst(to, c) = src(from, c);
  };
  for (std::size_t r = 0; r < reserved; ++r) copy_row(r, r);  // reserved rows stay in place

  std::string how =
      name + " " + std::to_string(old_n) + " -> " + std::to_string(new_positions) + " positions";
  switch (method) {
    case ResizeMethod::copy:
    case ResizeMethod::truncate:
      for (std::size_t p = 0; p < new_positions; ++p) copy_row(reserved + p, reserved + p % old_n);
      break;
    case ResizeMethod::interpolate:
      // New position j sits at old position j * (old_n - 1) / (new_n - 1): an integer part i and
      // a fraction rem / den, computed exactly in integers.
      for (std::size_t j = 0; j < new_positions; ++j) {
        const std::uint64_t den = new_positions > 1 ? new_positions - 1 : 1;
        const std::uint64_t num = static_cast<std::uint64_t>(j) * (old_n - 1);
        const std::size_t i = static_cast<std::size_t>(num / den);
        const std::uint64_t rem = num % den;
        if (rem == 0) {
          copy_row(reserved + j, reserved + i);
          continue;
        }
        const double t = static_cast<double>(rem) / static_cast<double>(den);
        for (std::size_t c = 0; c < dim; ++c) {
          const double a = src(reserved + i, c);
          const double b = src(reserved + i + 1, c);
          dst(reserved + j, c) = static_cast<float>(a + t * (b - a));
        }
      }
      break;
    case ResizeMethod::random: {
      for (std::size_t p = 0; p < old_n; ++p) copy_row(reserved + p, reserved + p);
      // The new rows are rows [old_n, new_n) of a whole (new_n, dim) table drawn with the
      // initializer, so shape-dependent initializers (glorot-uniform) see the table's shape and
      // `sinusoidal` gives the encoding of the new positions.
      Matrix<float> fresh(new_positions, dim);
      initialize_table(fresh.view(),
                       Initializer::parse(options.initializer, options.stddev, options.seed));
      const std::string bad =
          detail::non_finite_description(fresh.cview().subrows(old_n, new_positions - old_n));
      if (!bad.empty()) {
        throw std::invalid_argument("resize_table: the " + options.initializer +
                                    " initializer with stddev " + fmt_double(options.stddev) +
                                    " drew " + bad + " of the new rows; use a smaller stddev");
      }
      for (std::size_t p = old_n; p < new_positions; ++p) {
        std::copy(fresh.row(p).begin(), fresh.row(p).end(), dst.row(reserved + p).begin());
      }
      how += ", new rows " + options.initializer + "(std=" + fmt_double(options.stddev) +
             ", seed=" + std::to_string(options.seed) + ")";
      break;
    }
  }
  if (reserved != 0) how += ", " + std::to_string(reserved) + " reserved rows kept";
  if (!table.source_file.empty()) {
    how += ", from '" + table.source_file + "' tensor '" + table.source_tensor + "'";
  }
  out.provenance =
      table.provenance.empty() ? "resize: " + how : table.provenance + "; resize: " + how;
  return out;
}

}  // namespace posemb
