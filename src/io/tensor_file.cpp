#include "posemb/tensor_file.hpp"

#include <array>
#include <cctype>
#include <limits>
#include <stdexcept>

namespace posemb {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes = {{{DType::F16, "F16", 2},
                                                {DType::BF16, "BF16", 2},
                                                {DType::F32, "F32", 4},
                                                {DType::F64, "F64", 8},
                                                {DType::BOOL, "BOOL", 1},
                                                {DType::U8, "U8", 1},
                                                {DType::I8, "I8", 1},
                                                {DType::I16, "I16", 2},
                                                {DType::U16, "U16", 2},
                                                {DType::I32, "I32", 4},
                                                {DType::U32, "U32", 4},
                                                {DType::I64, "I64", 8},
                                                {DType::U64, "U64", 8},
                                                {DType::F8_E4M3, "F8_E4M3", 1},
                                                {DType::F8_E5M2, "F8_E5M2", 1}}};

const DTypeInfo& info(DType d) noexcept {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return i;
  }
  return kDTypes[2];  // unreachable for a valid enumerator
}

template <class Src, class Dst>
Matrix<Dst> to_matrix(const Tensor& t, const std::vector<Src>& values, const char* op) {
  if (t.shape.size() != 2) {
    throw std::invalid_argument(std::string(op) + ": tensor '" + t.name + "' has shape " +
                                shape_string(t.shape) + ", not 2-D (rows, cols)");
  }
  if (values.size() != t.element_count()) {
    throw std::invalid_argument(std::string(op) + ": tensor '" + t.name + "' holds " +
                                std::to_string(values.size()) + " values for shape " +
                                shape_string(t.shape));
  }
  Matrix<Dst> m(static_cast<std::size_t>(t.shape[0]), static_cast<std::size_t>(t.shape[1]));
  auto out = m.flat();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<Dst>(values[i]);
  return m;
}

template <class T>
Tensor make_tensor(std::string name, MatrixView<const T> m, DType dtype) {
  if (!dtype_is_float(dtype)) {
    throw std::invalid_argument("Tensor::from_matrix: dtype " + std::string(dtype_name(dtype)) +
                                " is not one of F16, BF16, F32, F64");
  }
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = {m.rows(), m.cols()};
  if (dtype == DType::F64) {
    t.values_f64.reserve(m.size());
    for (std::size_t r = 0; r < m.rows(); ++r) {
      for (T v : m.row(r)) t.values_f64.push_back(static_cast<double>(v));
    }
  } else {
    t.values.reserve(m.size());
    for (std::size_t r = 0; r < m.rows(); ++r) {
      for (T v : m.row(r)) t.values.push_back(static_cast<float>(v));
    }
  }
  return t;
}

}  // namespace

FileFormatError::FileFormatError(std::string_view path, std::string_view problem)
    : std::runtime_error(std::string("'").append(path) + "': " + std::string(problem)),
      path_(path) {}

std::string_view dtype_name(DType dtype) noexcept {
  return info(dtype).name;
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& i : kDTypes) {
    if (i.name == name) return i.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) noexcept {
  return info(dtype).size;
}

bool dtype_is_float(DType dtype) noexcept {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64;
}

DType parse_float_dtype(std::string_view name) {
  std::string s(name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "f32" || s == "float32") return DType::F32;
  if (s == "f64" || s == "float64") return DType::F64;
  if (s == "f16" || s == "float16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  throw std::invalid_argument("parse_float_dtype: unknown dtype '" + std::string(name) +
                              "' (expected f32, f64, f16 or bf16)");
}

std::uint64_t Tensor::element_count() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) {
      throw std::overflow_error("Tensor::element_count: shape " + shape_string(shape) +
                                " of tensor '" + name + "' overflows 64 bits");
    }
    n *= d;
  }
  return n;
}

Tensor Tensor::from_matrix(std::string name, MatrixView<const float> m, DType dtype) {
  return make_tensor<float>(std::move(name), m, dtype);
}
Tensor Tensor::from_matrix(std::string name, MatrixView<const double> m, DType dtype) {
  return make_tensor<double>(std::move(name), m, dtype);
}

Matrix<float> Tensor::to_matrix_f32() const {
  if (!has_values()) {
    throw std::invalid_argument("Tensor::to_matrix_f32: tensor '" + name + "' has dtype " +
                                std::string(dtype_name(dtype)) + ", whose values are not decoded");
  }
  if (dtype == DType::F64) return to_matrix<double, float>(*this, values_f64, "to_matrix_f32");
  return to_matrix<float, float>(*this, values, "to_matrix_f32");
}

Matrix<double> Tensor::to_matrix_f64() const {
  if (!has_values()) {
    throw std::invalid_argument("Tensor::to_matrix_f64: tensor '" + name + "' has dtype " +
                                std::string(dtype_name(dtype)) + ", whose values are not decoded");
  }
  if (dtype == DType::F64) return to_matrix<double, double>(*this, values_f64, "to_matrix_f64");
  return to_matrix<float, double>(*this, values, "to_matrix_f64");
}

const Tensor* TensorFile::find(std::string_view name) const noexcept {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const Tensor& TensorFile::at(std::string_view name) const {
  if (const Tensor* t = find(name)) return *t;
  std::string names;
  for (std::size_t i = 0; i < tensors.size() && i < 20; ++i) {
    names += (i != 0 ? ", '" : "'") + tensors[i].name + "'";
  }
  if (tensors.size() > 20) names += ", ...";
  throw std::out_of_range("TensorFile::at: no tensor named '" + std::string(name) + "' (" +
                          std::to_string(tensors.size()) + " tensors: " + names + ")");
}

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace posemb
