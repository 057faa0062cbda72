#include "posemb/position_table_file.hpp"

#include <stdexcept>
#include <vector>

#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"
#include "table_checks.hpp"

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

std::vector<std::string_view> two_d_float_names(const TensorFile& f) {
  std::vector<std::string_view> v;
  for (const auto& t : f.tensors) {
    if (t.shape().size() == 2 && dtype_is_float(t.dtype())) v.push_back(t.name());
  }
  return v;
}

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
  const TensorFile file = read_tensor_file(path);
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
  const Tensor& tensor = *file.find(name);
  const std::string what = tensor.name().empty() ? "the array" : "tensor " + quote_untrusted(name);
  if (tensor.shape().size() != 2 || !dtype_is_float(tensor.dtype())) {
    throw FileFormatError(path, what + " (" + std::string(dtype_name(tensor.dtype())) + ", shape " +
                                    shape_string(tensor.shape()) +
                                    ") is not a 2-D float table (positions, dim)");
  }
  if (tensor.shape()[1] == 0) {
    throw FileFormatError(path, what + " has shape " + shape_string(tensor.shape()) +
                                    ": a position table needs at least one column");
  }
  t.values = tensor.to_matrix<float>();
  if (const std::string bad = detail::non_finite_description(t.values); !bad.empty()) {
    throw FileFormatError(path,
                          what + " holds " + bad + "; posemb refuses tables with NaN or infinity");
  }
  t.dtype = tensor.dtype();
  t.source_file = path;
  t.source_tensor = name;
  const Metadata& m = file.metadata;
  if (m.count("posemb.reserved_rows") != 0) {
    t.reserved_rows = parse_count(m, "posemb.reserved_rows", path);
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
  if (auto it = m.find("posemb.provenance"); it != m.end()) t.provenance = it->second;
  return t;
}

void save_position_table(const std::string& path, const PositionTable& table,
                         std::optional<DType> dtype) {
  const DType out = dtype.value_or(table.dtype);
  const std::string op = "save_position_table: " + quote_untrusted(path) + ": ";
  if (table.reserved_rows > table.values.rows()) {
    throw std::invalid_argument(op + "reserved_rows " + std::to_string(table.reserved_rows) +
                                " exceeds the table's " + std::to_string(table.values.rows()) +
                                " rows");
  }
  if (!dtype_is_float(out)) {
    throw std::invalid_argument(op + "dtype " + std::string(dtype_name(out)) +
                                " is not a float dtype (F16, BF16, F32, F64)");
  }
  const bool npy = path.size() >= 4 && path.substr(path.size() - 4) == ".npy";
  if (npy) {
    if (table.reserved_rows != 0) {
      throw std::invalid_argument(op + ".npy cannot record the " +
                                  std::to_string(table.reserved_rows) +
                                  " reserved rows; save as .safetensors");
    }
    if (out == DType::BF16) {
      throw std::invalid_argument(op + ".npy cannot hold BF16 (numpy has no bfloat16)");
    }
    write_npy(path, Tensor::from_matrix("", table.values).astype(out));
    return;
  }
  const std::string name =
      table.source_tensor.empty() ? std::string(kDefaultTensorName) : table.source_tensor;
  Metadata m;
  m["posemb.tensor"] = name;
  m["posemb.reserved_rows"] = std::to_string(table.reserved_rows);
  if (table.training_length) m["posemb.training_length"] = std::to_string(*table.training_length);
  if (!table.initializer.empty()) m["posemb.initializer"] = table.initializer;
  if (!table.provenance.empty()) m["posemb.provenance"] = table.provenance;
  write_safetensors(path, {Tensor::from_matrix(name, table.values)}, m, out);
}

}  // namespace posemb
