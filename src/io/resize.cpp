#include "posemb/resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "posemb/errors.hpp"
#include "posemb/initializers.hpp"
#include "posemb/memory.hpp"
#include "posemb/sinusoidal.hpp"
#include "posemb/table_analysis.hpp"
#include "table_checks.hpp"
#include "table_metadata.hpp"

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
    case ResizeMethod::sinusoidal:
      return "sinusoidal";
  }
  return "?";
}

ResizeMethod parse_resize_method(std::string_view name) {
  std::string names;
  for (auto m : kResizeMethods) {
    if (resize_method_name(m) == name) return m;
    names += (names.empty() ? "" : ", ") + std::string(resize_method_name(m));
  }
  throw std::invalid_argument("parse_resize_method: unknown method " + quote_untrusted(name) +
                              " (expected one of " + names + ")");
}

namespace {

// Every check of resize_table, before anything is allocated.
void check_resize(const PositionTable& table, std::size_t new_positions, ResizeMethod method,
                  const ResizeOptions& options) {
  const std::size_t reserved = table.reserved_rows;
  const std::size_t rows = table.values.rows();
  const std::string name(resize_method_name(method));
  if (reserved > rows) {
    throw std::invalid_argument("resize_table: reserved_rows " + std::to_string(reserved) +
                                " exceeds the table's " + std::to_string(rows) + " rows");
  }
  if (table.values.cols() == 0) {
    throw std::invalid_argument("resize_table: " + table_label(table) + " has " +
                                std::to_string(rows) + " rows of 0 columns; a position table " +
                                "needs at least one column");
  }
  const std::size_t old_n = rows - reserved;
  if (new_positions == 0) throw std::invalid_argument("resize_table: new_positions is 0");
  if (method == ResizeMethod::truncate && new_positions > old_n) {
    throw std::invalid_argument("resize_table: truncate shrinks, but " +
                                std::to_string(new_positions) + " positions > the table's " +
                                std::to_string(old_n) +
                                "; grow with copy, interpolate, random or sinusoidal");
  }
  if (method != ResizeMethod::truncate && new_positions < old_n) {
    throw std::invalid_argument("resize_table: " + name + " grows, but " +
                                std::to_string(new_positions) + " positions < the table's " +
                                std::to_string(old_n) + "; shrink with truncate");
  }
  if (old_n == 0 && method != ResizeMethod::random) {
    throw std::invalid_argument("resize_table: the table has no positions, and '" + name +
                                "' makes new rows from the old ones; only 'random' fills an "
                                "empty table");
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
}

// The methods. Each fills the positions of dst (new_n, dim) from the positions of src
// (old_n, dim); the reserved rows are not theirs.

// copy and truncate: position p is old position p % old_n.
void tile_positions(MatrixView<const float> src, MatrixView<float> dst) {
  for (std::size_t p = 0; p < dst.rows(); ++p) {
    const auto from = src.row(p % src.rows());
    std::copy(from.begin(), from.end(), dst.row(p).begin());
  }
}

// New position j sits at old position j * (old_n - 1) / (new_n - 1): an integer part i and a
// fraction rem / den, computed exactly in integers; exact positions are copied.
void interpolate_positions(MatrixView<const float> src, MatrixView<float> dst) {
  const std::size_t old_n = src.rows(), new_n = dst.rows(), dim = src.cols();
  const std::uint64_t den = new_n > 1 ? new_n - 1 : 1;
  for (std::size_t j = 0; j < new_n; ++j) {
    const std::uint64_t num = static_cast<std::uint64_t>(j) * (old_n - 1);
    const std::size_t i = static_cast<std::size_t>(num / den);
    const std::uint64_t rem = num % den;
    if (rem == 0) {
      std::copy(src.row(i).begin(), src.row(i).end(), dst.row(j).begin());
      continue;
    }
    const double t = static_cast<double>(rem) / static_cast<double>(den);
    for (std::size_t c = 0; c < dim; ++c) {
      const double a = src(i, c);
      const double b = src(i + 1, c);
      dst(j, c) = static_cast<float>(a + t * (b - a));
    }
  }
}

// The old positions bit for bit; the new ones rows [old_n, new_n) of a whole (new_n, dim)
// table drawn with the initializer, so shape-dependent initializers (glorot-uniform) see the
// table's shape and `sinusoidal` gives the encoding of the new positions.
void draw_new_positions(MatrixView<const float> src, MatrixView<float> dst,
                        const ResizeOptions& options) {
  const std::size_t old_n = src.rows(), new_n = dst.rows();
  for (std::size_t p = 0; p < old_n; ++p) {
    std::copy(src.row(p).begin(), src.row(p).end(), dst.row(p).begin());
  }
  Matrix<float> fresh(new_n, dst.cols());
  try {
    initialize_table(fresh.view(),
                     Initializer::parse(options.initializer, options.stddev, options.seed));
  } catch (const std::invalid_argument& e) {
    // A stddev whose draws cannot all be finite floats is refused before drawing.
    throw std::invalid_argument(std::string("resize_table: ") + e.what());
  }
  const std::string bad =
      detail::non_finite_description(fresh.cview().subrows(old_n, new_n - old_n));
  if (!bad.empty()) {
    throw std::invalid_argument("resize_table: the " + options.initializer +
                                " initializer with stddev " + fmt_double(options.stddev) +
                                " drew " + bad + " of the new rows; use a smaller stddev");
  }
  for (std::size_t p = old_n; p < new_n; ++p) {
    std::copy(fresh.row(p).begin(), fresh.row(p).end(), dst.row(p).begin());
  }
}

// The old positions bit for bit; the new ones the sinusoidal encoding of their positions,
// scaled to the old positions' mean row norm. Returns the scale (nullopt when nothing is new).
std::optional<double> extend_sinusoidal(MatrixView<const float> src, MatrixView<float> dst) {
  const std::size_t old_n = src.rows(), new_n = dst.rows(), dim = src.cols();
  for (std::size_t p = 0; p < old_n; ++p) {
    std::copy(src.row(p).begin(), src.row(p).end(), dst.row(p).begin());
  }
  if (new_n == old_n) return std::nullopt;
  const Matrix<float> fresh =
      sinusoidal_positional_encoding(new_n - old_n, dim, old_n);  // (new_n - old_n, dim)
  const double fresh_norm = row_norm_stats(fresh.cview()).mean;
  const double scale = fresh_norm > 0.0 ? row_norm_stats(src).mean / fresh_norm : 0.0;
  for (std::size_t p = 0; p < fresh.rows(); ++p) {
    for (std::size_t c = 0; c < dim; ++c) {
      dst(old_n + p, c) = static_cast<float>(fresh(p, c) * scale);
    }
  }
  return scale;
}

}  // namespace

PositionTable resize_table(const PositionTable& table, std::size_t new_positions,
                           ResizeMethod method, const ResizeOptions& options) {
  check_resize(table, new_positions, method, options);
  const std::size_t reserved = table.reserved_rows;
  const std::size_t dim = table.values.cols();
  // The result, and for `random` and `sinusoidal` the freshly made rows, before any allocation.
  const bool fresh = method == ResizeMethod::random || method == ResizeMethod::sinusoidal;
  check_allocation("resize_table",
                   saturating_mul(saturating_add(saturating_add(reserved, new_positions),
                                                 fresh ? new_positions : 0),
                                  saturating_mul(dim, sizeof(float))));
  PositionTable out;
  out.values = Matrix<float>(reserved + new_positions, dim);  // (reserved + new_positions, dim)
  out.reserved_rows = reserved;
  out.training_length = table.training_length;
  out.initializer = table.initializer;
  out.source_tensor = table.source_tensor;
  out.dtype = table.dtype;
  out.how_found = table.how_found;
  out.stored_shape = table.stored_shape;
  out.resizes = table.resizes;
  for (std::size_t r = 0; r < reserved; ++r) {  // reserved rows stay in place
    std::copy(table.values.row(r).begin(), table.values.row(r).end(), out.values.row(r).begin());
  }
  const MatrixView<const float> src = table.usable();                                // (old_n, dim)
  const MatrixView<float> dst = out.values.view().subrows(reserved, new_positions);  // (new_n, dim)
  TableResize step;
  step.method = std::string(resize_method_name(method));
  step.from_positions = table.positions();
  step.to_positions = new_positions;
  step.reserved_rows = reserved;
  step.source_file = table.source_file;
  step.source_tensor = table.source_tensor;
  switch (method) {
    case ResizeMethod::copy:
    case ResizeMethod::truncate:
      tile_positions(src, dst);
      break;
    case ResizeMethod::interpolate:
      interpolate_positions(src, dst);
      break;
    case ResizeMethod::random:
      draw_new_positions(src, dst, options);
      step.initializer = options.initializer;
      step.stddev = options.stddev;
      step.seed = options.seed;
      break;
    case ResizeMethod::sinusoidal:
      step.scale = extend_sinusoidal(src, dst);
      break;
  }
  const std::string how = describe_resize(step);
  out.provenance = table.provenance.empty() ? how : table.provenance + "; " + how;
  out.resizes.push_back(std::move(step));
  return out;
}

namespace {

bool is_integer_dtype(DType d) {
  switch (d) {
    case DType::U8:
    case DType::I8:
    case DType::I16:
    case DType::U16:
    case DType::I32:
    case DType::U32:
    case DType::I64:
    case DType::U64:
      return true;
    default:
      return false;
  }
}

// Element i of an integer tensor as a signed 64-bit value (U64 above 2^63 wraps; only compared).
std::int64_t integer_at(const Tensor& t, std::size_t i) {
  const std::byte* p = t.bytes().data() + i * dtype_size(t.dtype());
  auto load = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<std::int64_t>(v);
  };
  switch (t.dtype()) {
    case DType::U8:
      return load(std::uint8_t{});
    case DType::I8:
      return load(std::int8_t{});
    case DType::I16:
      return load(std::int16_t{});
    case DType::U16:
      return load(std::uint16_t{});
    case DType::I32:
      return load(std::int32_t{});
    case DType::U32:
      return load(std::uint32_t{});
    case DType::I64:
      return load(std::int64_t{});
    default:
      return load(std::uint64_t{});
  }
}

void store_integer(std::byte* p, DType d, std::int64_t v) {
  auto put = [p]<class T>(T x) { std::memcpy(p, &x, sizeof x); };
  switch (d) {
    case DType::U8:
      return put(static_cast<std::uint8_t>(v));
    case DType::I8:
      return put(static_cast<std::int8_t>(v));
    case DType::I16:
      return put(static_cast<std::int16_t>(v));
    case DType::U16:
      return put(static_cast<std::uint16_t>(v));
    case DType::I32:
      return put(static_cast<std::int32_t>(v));
    case DType::U32:
      return put(static_cast<std::uint32_t>(v));
    case DType::I64:
      return put(v);
    default:
      return put(static_cast<std::uint64_t>(v));
  }
}

// The largest value integer dtype d holds.
std::uint64_t integer_max(DType d) {
  switch (d) {
    case DType::U8:
      return 0xff;
    case DType::I8:
      return 0x7f;
    case DType::I16:
      return 0x7fff;
    case DType::U16:
      return 0xffff;
    case DType::I32:
      return 0x7fffffff;
    case DType::U32:
      return 0xffffffff;
    case DType::I64:
      return 0x7fffffffffffffff;
    default:
      return 0xffffffffffffffff;
  }
}

// The module a tensor belongs to: its name without a trailing ".weight" and the last component
// ("bert.embeddings.position_embeddings.weight" -> "bert.embeddings."; "wpe.weight" -> "").
std::string module_prefix(const std::string& name) {
  std::string_view n = name;
  constexpr std::string_view kWeight = ".weight";
  if (n.size() > kWeight.size() && n.substr(n.size() - kWeight.size()) == kWeight) {
    n.remove_suffix(kWeight.size());
  }
  const auto dot = n.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(n.substr(0, dot + 1));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

ResizedFile replace_position_table(const TensorFile& file, const PositionTable& table,
                                   std::optional<DType> dtype) {
  const std::string& name = table.source_tensor;
  const Tensor* old = file.find(name);
  if (old == nullptr) {
    throw std::invalid_argument("replace_position_table: the file has no tensor " +
                                quote_untrusted(name) + " to replace");
  }
  const auto& os = old->shape();
  const std::size_t rows = table.values.rows();
  if (os.size() < 2 || os.back() != table.values.cols() ||
      (!table.stored_shape.empty() && table.stored_shape.size() != os.size())) {
    throw std::invalid_argument("replace_position_table: tensor " + quote_untrusted(name) +
                                " has shape " + shape_string(os) + "; the new table is " +
                                std::to_string(rows) + " x " + std::to_string(table.values.cols()) +
                                " in the form " + shape_string(table.stored_shape));
  }
  const std::uint64_t old_rows = os[os.size() - 2];
  PositionTable shaped_table = table;
  if (shaped_table.stored_shape.empty()) shaped_table.stored_shape = os;
  ResizedFile out;
  out.metadata = file.metadata;
  const std::string module = module_prefix(name);
  for (const Tensor& t : file.tensors) {
    if (t.name() == name) {
      out.tensors.push_back(position_table_tensor(shaped_table, dtype.value_or(table.dtype)));
      continue;
    }
    const auto& s = t.shape();
    std::size_t old_dims = 0;
    for (auto d : s) old_dims += d == old_rows ? 1 : 0;
    bool buffer_shape = !s.empty() && s.back() == old_rows;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) buffer_shape = buffer_shape && s[i] == 1;
    if (is_integer_dtype(t.dtype()) && buffer_shape && old_rows == rows) {
      out.tensors.push_back(t);  // same length: nothing to extend
      continue;
    }
    if (is_integer_dtype(t.dtype()) && buffer_shape && t.name().starts_with(module)) {
      // 0, 1, 2, ... continues counting; a constant stays constant.
      bool counting = true, constant = true;
      const std::int64_t first = old_rows > 0 ? integer_at(t, 0) : 0;
      for (std::size_t i = 0; i < old_rows && (counting || constant); ++i) {
        const std::int64_t v = integer_at(t, i);
        counting = counting && v == static_cast<std::int64_t>(i);
        constant = constant && v == first;
      }
      if (old_rows > 0 && (counting || constant)) {
        std::vector<std::uint64_t> shape = s;
        shape.back() = rows;
        // Counting past the dtype's largest value would wrap (U8: ..., 255, 0, 1, ...): the ids
        // are widened to I64 (torch's dtype for position ids) instead, and the reason recorded.
        const bool widen = counting && rows - 1 > integer_max(t.dtype());
        const DType dt = widen ? DType::I64 : t.dtype();
        const std::size_t width = dtype_size(dt);
        check_allocation("replace_position_table", saturating_mul(rows, width));
        std::vector<std::byte> bytes(rows * width);
        for (std::size_t i = 0; i < rows; ++i) {
          store_integer(bytes.data() + i * width, dt,
                        counting ? static_cast<std::int64_t>(i) : first);
        }
        out.tensors.push_back(Tensor::from_bytes(t.name(), dt, shape, bytes));
        out.extended.push_back(t.name() + ": " + shape_string(s) + " -> " + shape_string(shape) +
                               (counting ? ", 0, 1, 2, ... continued"
                                         : ", the constant " + std::to_string(first) + " kept") +
                               (widen ? ", widened from " + std::string(dtype_name(t.dtype())) +
                                            " to I64 (" + std::string(dtype_name(t.dtype())) +
                                            " holds at most " +
                                            std::to_string(integer_max(t.dtype())) + ")"
                                      : ""));
        continue;
      }
    }
    out.tensors.push_back(t);
    if (old_rows == rows) continue;
    const bool state_of_table = ends_with(t.name(), "." + name) && s == os;
    const bool square = old_dims >= 2;
    const bool odd_buffer = is_integer_dtype(t.dtype()) && buffer_shape;
    if (state_of_table || square || odd_buffer) out.kept_with_old_length.push_back(t.name());
  }
  detail::set_table_metadata(out.metadata, table, name);
  return out;
}

}  // namespace posemb
