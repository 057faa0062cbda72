// posemb/tensor_file.hpp: named tensors as they live in files (.safetensors, .npy): element
// types, the Tensor (one buffer with a dtype and a shape), and the contents of a file.
//
//   posemb::TensorFile f = posemb::read_safetensors("model.safetensors");   // decodes nothing
//   const posemb::Tensor& wpe = f.at("wpe.weight");         // F16, shape [1024, 768]
//   posemb::Matrix<float> m = wpe.to_matrix<float>();       // (1024, 768), F16 -> float exact
//   std::span<const std::byte> raw = wpe.bytes();           // the file's bytes, little-endian
//
//   posemb::Tensor t = posemb::Tensor::from_matrix("wpe.weight", m);    // F32, a copy of m
//   posemb::Tensor h = t.astype(posemb::DType::BF16);       // rounded to nearest even
//   f.at("position_ids").to_matrix<std::int64_t>();         // integers: the dtype must match
//
// A Tensor is an immutable value: its bytes are either its own or a view into memory kept
// alive by the tensor (a file mapping, for tensors read by read_safetensors / read_npy), so
// copying a tensor shares the bytes and reading a file copies or converts nothing. Values are
// converted only on request: to_matrix<T>() and astype(). Bytes are little-endian (posemb
// assumes a little-endian host).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/half.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// Element types: every safetensors dtype. F16, BF16, F32 and F64 are the float dtypes
// (converted among each other on request); the others are kept as bytes and read as their own
// C++ type (F8_E4M3 and F8_E5M2 as bytes only).
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

// The safetensors spelling ("F32", "BF16", ...). Throws std::invalid_argument naming the
// numeric value when dtype is no listed DType (a number cast to DType).
std::string_view dtype_name(DType dtype);
// The DType of a safetensors spelling; std::nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name) noexcept;
// Bytes per element. Throws std::invalid_argument like dtype_name.
std::size_t dtype_size(DType dtype);
// True for F16, BF16, F32, F64 (false for a value that is no listed DType).
bool dtype_is_float(DType dtype) noexcept;

// The dtype names of the command line: "f32", "float32", "f64", "float64", "f16", "float16",
// "bf16", "bfloat16" (any case). Throws std::invalid_argument otherwise.
DType parse_float_dtype(std::string_view name);

// A shape as text, "[1024, 768]" (for messages).
std::string shape_string(const std::vector<std::uint64_t>& shape);

// The C++ element types of tensors and their dtypes: float, double, float16, bfloat16 (the
// float dtypes), bool (BOOL), and the fixed-width integers (I8 ... U64).
template <class T>
inline constexpr bool is_tensor_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, float16> ||
    std::is_same_v<T, bfloat16> || std::is_same_v<T, bool> || std::is_same_v<T, std::int8_t> ||
    std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int16_t> ||
    std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, std::uint64_t>;
template <class T>
concept TensorElement = is_tensor_element_v<T>;

// The dtype of element type T (F32 for float, I64 for std::int64_t, ...).
template <TensorElement T>
inline constexpr DType dtype_of = std::is_same_v<T, float>           ? DType::F32
                                  : std::is_same_v<T, double>        ? DType::F64
                                  : std::is_same_v<T, float16>       ? DType::F16
                                  : std::is_same_v<T, bfloat16>      ? DType::BF16
                                  : std::is_same_v<T, bool>          ? DType::BOOL
                                  : std::is_same_v<T, std::int8_t>   ? DType::I8
                                  : std::is_same_v<T, std::uint8_t>  ? DType::U8
                                  : std::is_same_v<T, std::int16_t>  ? DType::I16
                                  : std::is_same_v<T, std::uint16_t> ? DType::U16
                                  : std::is_same_v<T, std::int32_t>  ? DType::I32
                                  : std::is_same_v<T, std::uint32_t> ? DType::U32
                                  : std::is_same_v<T, std::int64_t>  ? DType::I64
                                                                     : DType::U64;

// Metadata of a file: safetensors' `__metadata__` (string to string).
using Metadata = std::map<std::string, std::string>;

namespace detail {
struct TensorAccess;  // the readers' way to hand over a buffer they decoded into
}  // namespace detail

// One named tensor: a dtype, a row-major shape ({} is a scalar) and element_count() *
// dtype_size(dtype()) bytes.
class Tensor {
 public:
  // An empty F32 tensor of shape [0], named "".
  Tensor() = default;

  // A tensor owning a copy of bytes. Throws std::invalid_argument when dtype is no listed
  // DType (naming its value), when bytes.size() is not element_count * dtype_size (or the shape
  // overflows 64 bits), MemoryLimitExceeded when the copy is over the memory budget.
  static Tensor from_bytes(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                           std::span<const std::byte> bytes);
  // A tensor viewing bytes that `owner` keeps alive (a mapping, a buffer): nothing is copied.
  // Same checks as from_bytes.
  static Tensor view(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                     std::span<const std::byte> bytes, std::shared_ptr<const void> owner);

  // A 2-D tensor (rows, cols) holding a copy of m (a Matrix or a MatrixView of any
  // TensorElement), dtype dtype_of<T>.
  template <class M>
  requires TensorElement<std::remove_cv_t<typename M::value_type>> &&
      std::convertible_to<const M&, MatrixView<const std::remove_cv_t<typename M::value_type>>>
  static Tensor from_matrix(std::string name, const M& m) {
    using T = std::remove_cv_t<typename M::value_type>;
    const MatrixView<const T> v = m;
    return from_rows(std::move(name), dtype_of<T>, v.rows(), v.cols(),
                     reinterpret_cast<const std::byte*>(v.data()), v.row_stride() * sizeof(T));
  }

  const std::string& name() const& noexcept { return name_; }
  std::string name() const&& { return name_; }  // a copy: the tensor is a temporary
  void set_name(std::string name) { name_ = std::move(name); }
  DType dtype() const noexcept { return dtype_; }
  const std::vector<std::uint64_t>& shape() const& noexcept { return shape_; }
  std::vector<std::uint64_t> shape() const&& { return shape_; }  // a copy, as name()
  // Product of the shape (1 for a scalar); never overflows (checked at construction).
  std::uint64_t element_count() const noexcept { return count_; }
  // The raw little-endian elements, row-major. Not of a temporary tensor: the bytes it owns
  // would be freed at the end of the statement.
  std::span<const std::byte> bytes() const& noexcept { return bytes_; }
  void bytes() const&& = delete;
  // True when the bytes belong to another owner (a file mapping), false when they are a copy
  // owned by this tensor (and its copies).
  bool is_view() const noexcept { return is_view_; }

  // The values of a 2-D tensor as a (rows, cols) matrix of T. Float T (float, double, float16,
  // bfloat16) converts from any float dtype: widening is exact, narrowing rounds to nearest
  // even (F16 overflows to infinity, NaN stays NaN). Integer and bool T need the same dtype
  // (bool: a non-zero byte is true). Throws std::invalid_argument when the tensor is not 2-D
  // or the dtype does not convert to T; MemoryLimitExceeded over the memory budget.
  template <TensorElement T>
  Matrix<T> to_matrix() const;

  // The same tensor in another float dtype (rounded to nearest even as above), owning its
  // bytes; the same dtype returns a copy sharing the bytes. Throws std::invalid_argument when
  // the tensor's dtype or `dtype` is not a float dtype.
  Tensor astype(DType dtype) const;

 private:
  friend struct detail::TensorAccess;
  static Tensor from_rows(std::string name, DType dtype, std::size_t rows, std::size_t cols,
                          const std::byte* data, std::size_t row_stride_bytes);

  std::string name_;
  DType dtype_ = DType::F32;
  std::vector<std::uint64_t> shape_ = {0};
  std::uint64_t count_ = 0;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;  // keeps bytes_ alive
  bool is_view_ = false;
};

// The two formats posemb reads, told apart by content (never by extension).
enum class TensorFileFormat : std::uint8_t { safetensors, npy };

// The contents of a tensor file: tensors in file order plus metadata. A .npy file is one
// tensor named "" and no metadata.
struct TensorFile {
  std::vector<Tensor> tensors = {};
  Metadata metadata = {};
  TensorFileFormat format = TensorFileFormat::safetensors;

  // The first tensor called name, or nullptr. Not of a temporary file (the pointer would
  // dangle at the end of the statement).
  const Tensor* find(std::string_view name) const& noexcept;
  void find(std::string_view name) const&& = delete;
  // The tensor called name; throws std::out_of_range listing (some of) the names when absent.
  // Of a temporary file (read_tensor_file(p).at(name)): a copy of the tensor (sharing its
  // bytes), which outlives the file.
  const Tensor& at(std::string_view name) const&;
  Tensor at(std::string_view name) const&&;
};

// The format of a file from its first bytes: the .npy magic "\x93NUMPY", or a safetensors
// header length followed by '{'. std::nullopt when neither.
std::optional<TensorFileFormat> detect_tensor_file_format(std::span<const std::byte> head) noexcept;

// Reads a .safetensors or .npy file, the format chosen by content; the file is opened once.
// Throws FileFormatError naming the file for a malformed file, for a file that is neither
// format ("neither a .npy nor a safetensors file") and for a path that is not a regular file;
// std::system_error when it cannot be opened or mapped.
TensorFile read_tensor_file(const std::string& path);

}  // namespace posemb
