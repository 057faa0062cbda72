// posemb/tensor_file.hpp: named tensors as they live in files (.safetensors, .npy), the file
// error type, and the element types posemb reads and writes.
//
//   posemb::Tensor t = posemb::Tensor::from_matrix("wpe.weight", table);   // (1024, 768), F32
//   t.dtype = posemb::DType::BF16;                 // write it as bfloat16 (rounded to nearest)
//   posemb::write_safetensors("wpe.safetensors", {t}, {{"posemb.training_length", "1024"}});
//   posemb::TensorFile f = posemb::read_safetensors("wpe.safetensors");
//   posemb::Matrix<float> back = f.at("wpe.weight").to_matrix_f32();  // BF16 -> float, exact
//
// Values of F16, BF16 and F32 tensors are held as float (every F16 and BF16 value is exactly
// a float), values of F64 tensors as double: reading then writing in the same dtype is
// bit-exact. Other safetensors dtypes (I64, U8, BOOL, ...) are validated and listed but their
// values are not decoded (has_values() is false).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// A file that is not what its format promises (truncated, lying header, unknown dtype, ...).
// what() names the file and the problem.
class FileFormatError : public std::runtime_error {
 public:
  FileFormatError(std::string_view path, std::string_view problem);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Element types. F16, BF16, F32 and F64 are decoded (to float / double) and can be written;
// the others are known to the safetensors reader (so that a checkpoint holding, say, an I64
// `position_ids` buffer reads) but are not decoded.
enum class DType : std::uint8_t {
  F16,
  BF16,
  F32,
  F64,
  BOOL,
  U8,
  I8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  F8_E4M3,
  F8_E5M2
};

// The safetensors spelling ("F32", "BF16", ...).
std::string_view dtype_name(DType dtype) noexcept;
// The DType of a safetensors spelling; std::nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name) noexcept;
// Bytes per element.
std::size_t dtype_size(DType dtype) noexcept;
// True for F16, BF16, F32, F64: the types posemb decodes and writes.
bool dtype_is_float(DType dtype) noexcept;

// The "DType::F32" style of the CLI: parses "f32", "F32", "float32", "bf16", "f16", "f64",
// "float64", "float16", "bfloat16". Throws std::invalid_argument otherwise.
DType parse_float_dtype(std::string_view name);

// A shape as text, "[1024, 768]" (for messages).
std::string shape_string(const std::vector<std::uint64_t>& shape);

// Metadata of a file: safetensors' `__metadata__` (string to string).
using Metadata = std::map<std::string, std::string>;

// One named tensor.
struct Tensor {
  std::string name;                  // "" for a .npy file
  DType dtype = DType::F32;          // the file's type (read) or the type to write (write)
  std::vector<std::uint64_t> shape;  // row-major (C order); {} is a scalar
  std::vector<float> values;         // dtype F16, BF16, F32: the elements, row-major
  std::vector<double> values_f64;    // dtype F64: the elements, row-major

  // Product of the shape (1 for a scalar). Throws std::overflow_error if it overflows.
  std::uint64_t element_count() const;
  // True when the values are decoded (dtype is F16, BF16, F32 or F64).
  bool has_values() const noexcept { return dtype_is_float(dtype); }

  // A 2-D tensor (rows, cols) holding a copy of m, as F32 (values) or F64 (values_f64).
  static Tensor from_matrix(std::string name, MatrixView<const float> m, DType dtype = DType::F32);
  static Tensor from_matrix(std::string name, MatrixView<const double> m, DType dtype = DType::F64);
  // The values of a 2-D tensor as a float matrix (F64 values rounded to nearest). Throws
  // std::invalid_argument if the tensor is not 2-D or its values are not decoded.
  Matrix<float> to_matrix_f32() const;
  // The values of a 2-D tensor as a double matrix (exact for every decoded dtype).
  Matrix<double> to_matrix_f64() const;
};

// The contents of a tensor file: tensors in file order plus metadata.
struct TensorFile {
  std::vector<Tensor> tensors;
  Metadata metadata;

  // The tensor called name, or nullptr.
  const Tensor* find(std::string_view name) const noexcept;
  // The tensor called name; throws std::out_of_range listing the names when absent.
  const Tensor& at(std::string_view name) const;
};

}  // namespace posemb
