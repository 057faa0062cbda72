#include "posemb/tensor_file.hpp"

#include <array>
#include <cctype>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "element_convert.hpp"
#include "mapped_file.hpp"
#include "posemb/memory.hpp"
#include "readers.hpp"

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

const DTypeInfo* find_info(DType d) noexcept {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return &i;
  }
  return nullptr;
}

// The dtype's entry; throws for a value that is no listed DType (it read as F32 before).
const DTypeInfo& info(DType d, std::string_view op) {
  detail::check_dtype(d, op);
  return *find_info(d);
}

std::string tensor_label(const std::string& name) {
  return "tensor " + quote_untrusted(name);
}

// Element count of shape; throws std::invalid_argument naming `op` when it overflows 64 bits.
std::uint64_t checked_count(const std::vector<std::uint64_t>& shape, std::string_view op,
                            const std::string& name) {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) {
      throw std::invalid_argument(std::string(op) + ": " + tensor_label(name) + " has shape " +
                                  shape_string(shape) + ", whose element count overflows 64 bits");
    }
    n *= d;
  }
  return n;
}

// Checks that bytes holds exactly the elements of shape; returns the element count.
std::uint64_t check_bytes(const std::string& name, DType dtype,
                          const std::vector<std::uint64_t>& shape, std::size_t bytes,
                          std::string_view op) {
  detail::check_dtype(dtype, op);
  const std::uint64_t n = checked_count(shape, op, name);
  const std::uint64_t size = dtype_size(dtype);
  if (n > std::numeric_limits<std::uint64_t>::max() / size || n * size != bytes) {
    throw std::invalid_argument(std::string(op) + ": " + tensor_label(name) + " has shape " +
                                shape_string(shape) + " of " + std::string(dtype_name(dtype)) +
                                " but " + std::to_string(bytes) + " bytes");
  }
  return n;
}

// An owned, uninitialized buffer of n bytes, checked against the memory budget.
std::shared_ptr<std::byte[]> allocate_bytes(std::size_t n, std::string_view op) {
  if (n == 0) return nullptr;
  check_allocation(op, n);
  return std::shared_ptr<std::byte[]>(new std::byte[n]);
}

}  // namespace

void detail::check_dtype(DType dtype, std::string_view op) {
  if (find_info(dtype) == nullptr) {
    throw std::invalid_argument(
        std::string(op) + ": dtype " + std::to_string(static_cast<unsigned>(dtype)) +
        " is no listed DType (0 to " + std::to_string(kDTypes.size() - 1) + ": F16 ... F8_E5M2)");
  }
}

std::string_view dtype_name(DType dtype) {
  return info(dtype, "dtype_name").name;
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& i : kDTypes) {
    if (i.name == name) return i.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) {
  return info(dtype, "dtype_size").size;
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
  throw std::invalid_argument("parse_float_dtype: unknown dtype " + quote_untrusted(name) +
                              " (expected f32, f64, f16 or bf16)");
}

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor Tensor::from_bytes(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                          std::span<const std::byte> bytes) {
  Tensor t;
  t.count_ = check_bytes(name, dtype, shape, bytes.size(), "Tensor::from_bytes");
  auto buf = allocate_bytes(bytes.size(), "Tensor::from_bytes");
  if (!bytes.empty()) std::memcpy(buf.get(), bytes.data(), bytes.size());
  t.name_ = std::move(name);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.bytes_ = {buf.get(), bytes.size()};
  t.owner_ = std::move(buf);
  return t;
}

std::shared_ptr<std::byte[]> detail::TensorAccess::allocate(std::size_t n, std::string_view op) {
  return allocate_bytes(n, op);
}

Tensor detail::TensorAccess::adopt(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                                   std::shared_ptr<std::byte[]> buffer, std::size_t size) {
  Tensor t;
  t.count_ = check_bytes(name, dtype, shape, size, "Tensor (decoded file data)");
  t.name_ = std::move(name);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.bytes_ = {buffer.get(), size};
  t.owner_ = std::move(buffer);
  return t;
}

Tensor Tensor::view(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                    std::span<const std::byte> bytes, std::shared_ptr<const void> owner) {
  Tensor t;
  t.count_ = check_bytes(name, dtype, shape, bytes.size(), "Tensor::view");
  if (owner == nullptr && !bytes.empty()) {
    throw std::invalid_argument("Tensor::view: " + tensor_label(name) +
                                ": no owner keeps its bytes alive");
  }
  t.name_ = std::move(name);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.bytes_ = bytes;
  t.owner_ = std::move(owner);
  t.is_view_ = true;
  return t;
}

Tensor Tensor::from_rows(std::string name, DType dtype, std::size_t rows, std::size_t cols,
                         const std::byte* data, std::size_t row_stride_bytes) {
  const std::size_t row_bytes = saturating_mul(cols, dtype_size(dtype));
  const std::size_t n = saturating_mul(rows, row_bytes);
  Tensor t;
  auto buf = allocate_bytes(n, "Tensor::from_matrix");
  for (std::size_t r = 0; r < rows && row_bytes != 0; ++r) {
    std::memcpy(buf.get() + r * row_bytes, data + r * row_stride_bytes, row_bytes);
  }
  t.name_ = std::move(name);
  t.dtype_ = dtype;
  t.shape_ = {rows, cols};
  t.count_ = static_cast<std::uint64_t>(rows) * cols;
  t.bytes_ = {buf.get(), n};
  t.owner_ = std::move(buf);
  return t;
}

template <TensorElement T>
Matrix<T> Tensor::to_matrix() const {
  if (shape_.size() != 2) {
    throw std::invalid_argument("Tensor::to_matrix: " + tensor_label(name_) + " has shape " +
                                shape_string(shape_) + ", not 2-D (rows, cols)");
  }
  const auto rows = static_cast<std::size_t>(shape_[0]);
  const auto cols = static_cast<std::size_t>(shape_[1]);
  if constexpr (detail::is_float_element_v<T>) {
    if (!dtype_is_float(dtype_)) {
      throw std::invalid_argument("Tensor::to_matrix: " + tensor_label(name_) + " has dtype " +
                                  std::string(dtype_name(dtype_)) + ", which does not convert to " +
                                  std::string(dtype_name(dtype_of<T>)) +
                                  " (float dtypes convert among each other only)");
    }
    Matrix<T> m(rows, cols);
    detail::convert_floats<T>(dtype_, bytes_.data(), m.data(), m.size());
    return m;
  } else {
    if (dtype_ != dtype_of<T>) {
      throw std::invalid_argument("Tensor::to_matrix: " + tensor_label(name_) + " has dtype " +
                                  std::string(dtype_name(dtype_)) + ", not " +
                                  std::string(dtype_name(dtype_of<T>)) +
                                  " (integer and bool tensors are read as their own type)");
    }
    Matrix<T> m(rows, cols);
    if constexpr (std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = bytes_[i] != std::byte{0};
    } else if (m.size() != 0) {
      std::memcpy(m.data(), bytes_.data(), m.size() * sizeof(T));
    }
    return m;
  }
}

template Matrix<float> Tensor::to_matrix<float>() const;
template Matrix<double> Tensor::to_matrix<double>() const;
template Matrix<float16> Tensor::to_matrix<float16>() const;
template Matrix<bfloat16> Tensor::to_matrix<bfloat16>() const;
template Matrix<bool> Tensor::to_matrix<bool>() const;
template Matrix<std::int8_t> Tensor::to_matrix<std::int8_t>() const;
template Matrix<std::uint8_t> Tensor::to_matrix<std::uint8_t>() const;
template Matrix<std::int16_t> Tensor::to_matrix<std::int16_t>() const;
template Matrix<std::uint16_t> Tensor::to_matrix<std::uint16_t>() const;
template Matrix<std::int32_t> Tensor::to_matrix<std::int32_t>() const;
template Matrix<std::uint32_t> Tensor::to_matrix<std::uint32_t>() const;
template Matrix<std::int64_t> Tensor::to_matrix<std::int64_t>() const;
template Matrix<std::uint64_t> Tensor::to_matrix<std::uint64_t>() const;

Tensor Tensor::astype(DType dtype) const {
  detail::check_dtype(dtype, "Tensor::astype");
  if (!dtype_is_float(dtype_) || !dtype_is_float(dtype)) {
    throw std::invalid_argument("Tensor::astype: " + tensor_label(name_) + " of dtype " +
                                std::string(dtype_name(dtype_)) + " cannot be converted to " +
                                std::string(dtype_name(dtype)) +
                                " (only F16, BF16, F32 and F64 convert)");
  }
  if (dtype == dtype_) return *this;
  const auto n = static_cast<std::size_t>(count_);
  const std::size_t nbytes = saturating_mul(n, dtype_size(dtype));
  auto buf = allocate_bytes(nbytes, "Tensor::astype");
  void* out = buf.get();
  switch (dtype) {
    case DType::F16:
      detail::convert_floats(dtype_, bytes_.data(), static_cast<float16*>(out), n);
      break;
    case DType::BF16:
      detail::convert_floats(dtype_, bytes_.data(), static_cast<bfloat16*>(out), n);
      break;
    case DType::F32:
      detail::convert_floats(dtype_, bytes_.data(), static_cast<float*>(out), n);
      break;
    default:
      detail::convert_floats(dtype_, bytes_.data(), static_cast<double*>(out), n);
      break;
  }
  Tensor t;
  t.name_ = name_;
  t.dtype_ = dtype;
  t.shape_ = shape_;
  t.count_ = count_;
  t.bytes_ = {buf.get(), nbytes};
  t.owner_ = std::move(buf);
  return t;
}

const Tensor* TensorFile::find(std::string_view name) const& noexcept {
  for (const auto& t : tensors) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

Tensor TensorFile::at(std::string_view name) const&& {
  const TensorFile& self = *this;
  return self.at(name);
}

const Tensor& TensorFile::at(std::string_view name) const& {
  if (const Tensor* t = find(name)) return *t;
  std::string names;
  for (std::size_t i = 0; i < tensors.size() && i < 20; ++i) {
    names += (i != 0 ? ", " : "") + quote_untrusted(tensors[i].name());
  }
  if (tensors.size() > 20) names += ", ...";
  throw std::out_of_range("TensorFile::at: no tensor named " + quote_untrusted(name) + " (" +
                          std::to_string(tensors.size()) + " tensors: " + names + ")");
}

std::optional<TensorFileFormat> detect_tensor_file_format(
    std::span<const std::byte> head) noexcept {
  if (head.size() >= 6 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0) {
    return TensorFileFormat::npy;
  }
  if (head.size() >= 9 && head[8] == std::byte{'{'}) return TensorFileFormat::safetensors;
  return std::nullopt;
}

TensorFile read_tensor_file(const std::string& path) {
  const auto file = detail::MappedFile::open(path, "read_tensor_file");
  const auto bytes = file->bytes();
  const auto format = detect_tensor_file_format(bytes);
  if (!format) {
    const std::string_view head(reinterpret_cast<const char*>(bytes.data()),
                                std::min<std::size_t>(bytes.size(), 16));
    throw FileFormatError(
        path, "neither a .npy nor a safetensors file (" +
                  (bytes.empty() ? std::string("it is empty")
                                 : "it starts with " + quote_untrusted(head, 16)) +
                  "; .npy starts with \\x93NUMPY, safetensors with an 8-byte length and '{')");
  }
  if (*format == TensorFileFormat::safetensors) {
    return detail::parse_safetensors(bytes, path, file);
  }
  TensorFile f;
  f.format = TensorFileFormat::npy;
  f.tensors.push_back(detail::parse_npy(bytes, path, file));
  return f;
}

namespace detail {

Tensor file_tensor(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                   std::span<const std::byte> bytes, const std::shared_ptr<const void>& owner) {
  if (owner) return Tensor::view(std::move(name), dtype, std::move(shape), bytes, owner);
  return Tensor::from_bytes(std::move(name), dtype, std::move(shape), bytes);
}

}  // namespace detail
}  // namespace posemb
