#include "posemb/position_table_file.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

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

std::string quoted_list(const std::vector<std::string>& names, std::size_t max = 20) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) {
    s += (i != 0 ? ", '" : "'") + names[i] + "'";
  }
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s.empty() ? "none" : s;
}

std::vector<std::string> two_d_float_names(const TensorFile& f) {
  std::vector<std::string> v;
  for (const auto& t : f.tensors) {
    if (t.shape.size() == 2 && t.has_values()) v.push_back(t.name);
  }
  return v;
}

std::size_t parse_count(const Metadata& m, const std::string& key, const std::string& path) {
  const std::string& s = m.at(key);
  std::size_t v = 0;
  if (s.empty() || s.size() > 18) {
    throw FileFormatError(path, "metadata " + key + " = '" + s + "' is not a row count");
  }
  for (char c : s) {
    if (c < '0' || c > '9') {
      throw FileFormatError(path, "metadata " + key + " = '" + s + "' is not a row count");
    }
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  return v;
}

}  // namespace

bool is_npy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[6] = {};
  in.read(magic, 6);
  return in.gcount() == 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0;
}

std::string find_position_tensor(const TensorFile& file, const std::string& path,
                                 const std::optional<std::string>& tensor_name,
                                 std::string* how_found) {
  auto set_how = [&](std::string s) {
    if (how_found != nullptr) *how_found = std::move(s);
  };
  if (tensor_name) {
    if (file.find(*tensor_name) == nullptr) {
      throw FileFormatError(
          path, "no tensor named '" + *tensor_name +
                    "'; 2-D float tensors in the file: " + quoted_list(two_d_float_names(file)));
    }
    set_how("named with --tensor");
    return *tensor_name;
  }
  if (auto it = file.metadata.find("posemb.tensor"); it != file.metadata.end()) {
    if (file.find(it->second) == nullptr) {
      throw FileFormatError(
          path, "metadata posemb.tensor names '" + it->second + "', which is not in the file");
    }
    set_how("named by the file's posemb.tensor metadata");
    return it->second;
  }
  for (std::string_view pattern : kCommonTableNames) {
    std::vector<std::string> hits;
    for (const auto& t : file.tensors) {
      if (matches(t.name, pattern)) hits.push_back(t.name);
    }
    if (hits.size() == 1) {
      set_how("common name '" + std::string(pattern) + "'");
      return hits.front();
    }
    if (hits.size() > 1) {
      throw FileFormatError(path, "several tensors match the common name '" + std::string(pattern) +
                                      "': " + quoted_list(hits) +
                                      "; choose one with --tensor NAME");
    }
  }
  std::string tried;
  for (std::string_view p : kCommonTableNames)
    tried += (tried.empty() ? "'" : ", '") + std::string(p) + "'";
  throw FileFormatError(
      path, "no position table found (tried " + tried + "); 2-D float tensors in the file: " +
                quoted_list(two_d_float_names(file)) + "; choose one with --tensor NAME");
}

PositionTable load_position_table(const std::string& path,
                                  const std::optional<std::string>& tensor_name) {
  TensorFile file;
  std::string name;
  PositionTable t;
  if (is_npy_file(path)) {
    file.tensors.push_back(read_npy(path));
    if (tensor_name && !tensor_name->empty()) {
      throw FileFormatError(path, "a .npy file holds one unnamed array; --tensor '" + *tensor_name +
                                      "' does not apply");
    }
    t.how_found = "the only array of a .npy file";
  } else {
    file = read_safetensors(path);
    name = find_position_tensor(file, path, tensor_name, &t.how_found);
  }
  const Tensor& tensor = *file.find(name);
  if (tensor.shape.size() != 2 || !tensor.has_values()) {
    std::string shape;
    for (auto d : tensor.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw FileFormatError(path, "tensor '" + name + "' (" + std::string(dtype_name(tensor.dtype)) +
                                    ", shape [" + shape +
                                    "]) is not a 2-D float table (positions, dim)");
  }
  t.values = tensor.to_matrix_f32();
  t.dtype = tensor.dtype;
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
  if (table.reserved_rows > table.values.rows()) {
    throw std::invalid_argument("save_position_table: reserved_rows " +
                                std::to_string(table.reserved_rows) + " exceeds the table's " +
                                std::to_string(table.values.rows()) + " rows");
  }
  const bool npy = path.size() >= 4 && path.substr(path.size() - 4) == ".npy";
  if (npy) {
    if (table.reserved_rows != 0) {
      throw std::invalid_argument("save_position_table: '" + path + "': .npy cannot record the " +
                                  std::to_string(table.reserved_rows) +
                                  " reserved rows; save as .safetensors");
    }
    if (out != DType::F32 && out != DType::F64) {
      throw std::invalid_argument("save_position_table: '" + path +
                                  "': .npy holds F32 or F64, not " + std::string(dtype_name(out)));
    }
    write_npy(path, Tensor::from_matrix("", table.values.cview(), out));
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
  Tensor t = Tensor::from_matrix(name, table.values.cview(), DType::F32);
  write_safetensors(path, {t}, m, out);
}

}  // namespace posemb
