#include "posemb/position_table_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "element_convert.hpp"
#include "file_system.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"
#include "readers.hpp"
#include "table_checks.hpp"
#include "table_metadata.hpp"

namespace posemb {
namespace {

constexpr std::string_view kDefaultTensorName = "position_embeddings";

bool matches(std::string_view name, std::string_view pattern) {
  if (!pattern.empty() && pattern.front() == '*') {
    const std::string_view suffix = pattern.substr(1);
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  }
  return name == pattern;
}

std::string quoted_list(const std::vector<std::string_view>& names, std::size_t max = 20) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) {
    s += (i != 0 ? ", " : "") + quote_untrusted(names[i]);
  }
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s.empty() ? "none" : s;
}

// (rows, dim), or a ViT's (1, rows, dim).
bool is_table_shape(const std::vector<std::uint64_t>& shape) {
  return shape.size() == 2 || (shape.size() == 3 && shape[0] == 1);
}

// The (rows, dim) view of a (1, rows, dim) tensor: the same bytes.
Tensor squeezed(const Tensor& t) {
  const auto& s = t.shape();
  return Tensor::view(t.name(), t.dtype(), {s[s.size() - 2], s.back()}, t.bytes(),
                      std::make_shared<Tensor>(t));
}

std::vector<std::string_view> two_d_float_names(const TensorFile& f) {
  std::vector<std::string_view> v;
  for (const auto& t : f.tensors) {
    if (is_table_shape(t.shape()) && dtype_is_float(t.dtype())) v.push_back(t.name());
  }
  return v;
}

// The largest count posemb's metadata holds (18 digits): what parse_count reads back, and so
// the largest save_position_table writes.
constexpr std::size_t kMaxRecordedCount = 999'999'999'999'999'999;

std::size_t parse_count(const Metadata& m, const std::string& key, const std::string& path) {
  const std::string& s = m.at(key);
  std::size_t v = 0;
  bool ok = !s.empty() && s.size() <= 18;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  if (!ok) {
    throw FileFormatError(
        path, "metadata " + key + " = " + quote_untrusted(s, 40) + " is not a row count");
  }
  for (char c : s) v = v * 10 + static_cast<std::size_t>(c - '0');
  return v;
}

}  // namespace

std::string find_position_tensor(const TensorFile& file, const std::string& path,
                                 const std::optional<std::string>& tensor_name,
                                 std::string* how_found) {
  auto set_how = [&](std::string s) {
    if (how_found != nullptr) *how_found = std::move(s);
  };
  if (tensor_name) {
    if (file.find(*tensor_name) == nullptr) {
      throw FileFormatError(
          path, "no tensor named " + quote_untrusted(*tensor_name) +
                    "; 2-D float tensors in the file: " + quoted_list(two_d_float_names(file)));
    }
    set_how("named by the caller");
    return *tensor_name;
  }
  if (auto it = file.metadata.find("posemb.tensor"); it != file.metadata.end()) {
    if (file.find(it->second) == nullptr) {
      throw FileFormatError(path, "metadata posemb.tensor names " + quote_untrusted(it->second) +
                                      ", which is not in the file");
    }
    set_how("named by the file's posemb.tensor metadata");
    return it->second;
  }
  for (std::string_view pattern : kCommonTableNames) {
    std::vector<std::string_view> hits;
    for (const auto& t : file.tensors) {
      if (matches(t.name(), pattern)) hits.push_back(t.name());
    }
    if (hits.size() == 1) {
      set_how("common name '" + std::string(pattern) + "'");
      return std::string(hits.front());
    }
    if (hits.size() > 1) {
      throw FileFormatError(path, "several tensors match the common name '" + std::string(pattern) +
                                      "': " + quoted_list(hits) + "; name the one to use");
    }
  }
  std::string tried;
  for (std::string_view p : kCommonTableNames)
    tried += (tried.empty() ? "'" : ", '") + std::string(p) + "'";
  throw FileFormatError(path, "no position table found (tried " + tried +
                                  "); 2-D float tensors in the file: " +
                                  quoted_list(two_d_float_names(file)) + "; name the one to use");
}

PositionTable load_position_table(const std::string& path,
                                  const std::optional<std::string>& tensor_name) {
  detail::check_path(path, "load_position_table");
  return load_position_table(read_tensor_file(path), path, tensor_name);
}

PositionTable load_position_table(const TensorFile& file, const std::string& path,
                                  const std::optional<std::string>& tensor_name) {
  std::string name;
  PositionTable t;
  if (file.format == TensorFileFormat::npy) {
    if (tensor_name && !tensor_name->empty()) {
      throw FileFormatError(path, "a .npy file holds one unnamed array; the tensor name " +
                                      quote_untrusted(*tensor_name) + " does not apply");
    }
    t.how_found = "the only array of a .npy file";
  } else {
    name = find_position_tensor(file, path, tensor_name, &t.how_found);
  }
  const Tensor& stored = *file.find(name);
  const std::string what = stored.name().empty() ? "the array" : "tensor " + quote_untrusted(name);
  const auto& shape = stored.shape();
  if (!is_table_shape(shape) || !dtype_is_float(stored.dtype())) {
    throw FileFormatError(path, what + " (" + std::string(dtype_name(stored.dtype())) + ", shape " +
                                    shape_string(shape) +
                                    ") is not a 2-D float table (positions, dim), nor a "
                                    "(1, positions, dim) one");
  }
  if (shape.back() == 0) {
    throw FileFormatError(path, what + " has shape " + shape_string(shape) +
                                    ": a position table needs at least one column");
  }
  // (1, N, C) is viewed as (N, C): the same bytes, row-major either way.
  const Tensor tensor = shape.size() == 2 ? stored : squeezed(stored);
  t.stored_shape = shape;
  t.values = tensor.to_matrix<float>();
  if (const auto at = detail::first_non_finite(t.values)) {
    if (tensor.dtype() == DType::F64) {
      // An infinity here may be a finite F64 value that float32 cannot hold: said as it is.
      double v = 0.0;
      const std::size_t i = at->first * t.values.cols() + at->second;
      std::memcpy(&v, tensor.bytes().data() + i * sizeof(double), sizeof v);
      if (std::isfinite(v)) {
        char value[32];
        std::snprintf(value, sizeof value, "%.17g", v);
        throw FileFormatError(
            path, what + " holds " + value + " at row " + std::to_string(at->first) + ", column " +
                      std::to_string(at->second) +
                      ": finite in F64, but beyond the largest float32 (3.40282347e+38), and "
                      "posemb's tables are float32; scale the table first");
      }
    }
    throw FileFormatError(path, what + " holds " + detail::non_finite_description(t.values) +
                                    "; posemb refuses tables with NaN or infinity");
  }
  t.dtype = tensor.dtype();
  t.source_file = path;
  t.source_tensor = name;
  // posemb's keys describe the tensor posemb.tensor names (every tensor when none is named).
  static const Metadata kNone;
  const auto named = file.metadata.find("posemb.tensor");
  const Metadata& m = named == file.metadata.end() || named->second == name ? file.metadata : kNone;
  if (m.count("posemb.reserved_rows") != 0) {
    t.reserved_rows = parse_count(m, "posemb.reserved_rows", path);
    t.reserved_rows_recorded = true;
    if (t.reserved_rows > t.values.rows()) {
      throw FileFormatError(path,
                            "metadata posemb.reserved_rows = " + std::to_string(t.reserved_rows) +
                                " but the table has " + std::to_string(t.values.rows()) + " rows");
    }
  }
  if (m.count("posemb.training_length") != 0) {
    t.training_length = parse_count(m, "posemb.training_length", path);
  }
  if (auto it = m.find("posemb.initializer"); it != m.end()) t.initializer = it->second;
  if (auto it = m.find(std::string(kProvenanceKey)); it != m.end()) t.provenance = it->second;
  t.resizes = recorded_resizes(m, path);
  return t;
}

Tensor position_table_tensor(const PositionTable& table, DType dtype) {
  const std::string op = "position_table_tensor: ";
  detail::check_dtype(dtype, "position_table_tensor");
  if (!dtype_is_float(dtype)) {
    throw std::invalid_argument(op + "dtype " + std::string(dtype_name(dtype)) +
                                " is not a float dtype (F16, BF16, F32, F64)");
  }
  const std::string name =
      table.source_tensor.empty() ? std::string(kDefaultTensorName) : table.source_tensor;
  // A finite table must stay finite in the file (load_position_table refuses infinity).
  detail::check_finite_in(dtype, table.values, op + "tensor " + quote_untrusted(name));
  Tensor t = Tensor::from_matrix(name, table.values).astype(dtype);
  const auto& s = table.stored_shape;
  if (s.empty() || s.size() == 2) return t;
  if (!is_table_shape(s) || s.back() != table.values.cols()) {
    throw std::invalid_argument(op + "stored shape " + shape_string(s) + " does not hold a (" +
                                std::to_string(table.values.rows()) + ", " +
                                std::to_string(table.values.cols()) + ") table");
  }
  std::vector<std::uint64_t> shape(s.begin(), s.end());
  shape[shape.size() - 2] = table.values.rows();  // leading 1s kept, rows updated
  return Tensor::view(name, dtype, std::move(shape), t.bytes(), std::make_shared<Tensor>(t));
}

void save_position_table(const std::string& path, const PositionTable& table,
                         std::optional<DType> dtype) {
  detail::check_path(path, "save_position_table");
  const DType out = dtype.value_or(table.dtype);
  const std::string op = "save_position_table: " + quote_untrusted(path) + ": ";
  if (table.reserved_rows > table.values.rows()) {
    throw std::invalid_argument(op + "reserved_rows " + std::to_string(table.reserved_rows) +
                                " exceeds the table's " + std::to_string(table.values.rows()) +
                                " rows");
  }
  if (table.values.cols() == 0) {
    // load_position_table refuses it: what is written must load back.
    throw std::invalid_argument(op + "a (" + std::to_string(table.values.rows()) +
                                ", 0) table has no columns; a position table needs at least one");
  }
  detail::check_dtype(out, "save_position_table: " + quote_untrusted(path));
  if (!dtype_is_float(out)) {
    throw std::invalid_argument(op + "dtype " + std::string(dtype_name(out)) +
                                " is not a float dtype (F16, BF16, F32, F64)");
  }
  // What is written must load back: load_position_table refuses the same things.
  if (table.training_length && *table.training_length > kMaxRecordedCount) {
    throw std::invalid_argument(op + "training_length " + std::to_string(*table.training_length) +
                                " is over " + std::to_string(kMaxRecordedCount) +
                                ", the largest the file's metadata holds");
  }
  if (const std::string bad = detail::non_finite_description(table.values); !bad.empty()) {
    throw std::invalid_argument(op + "the table holds " + bad +
                                "; posemb refuses tables with NaN or infinity");
  }
  const bool npy = path.size() >= 4 && path.substr(path.size() - 4) == ".npy";
  if (npy && out == DType::BF16) {
    throw std::invalid_argument(op + ".npy cannot hold BF16 (numpy has no bfloat16)");
  }
  const Tensor t = position_table_tensor(table, out);
  if (npy) {
    // Every row, reserved ones included: .npy has no place for the count.
    write_npy(path, Tensor::view("", t.dtype(), t.shape(), t.bytes(), std::make_shared<Tensor>(t)));
    return;
  }
  Metadata m;
  detail::set_table_metadata(m, table, t.name());
  write_safetensors(path, {t}, m);
}

}  // namespace posemb
