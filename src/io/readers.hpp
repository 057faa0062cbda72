// src/io/readers.hpp (internal): the format readers over bytes, shared by read_safetensors,
// read_npy and read_tensor_file so that a file is opened and mapped once.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "posemb/tensor_file.hpp"

namespace posemb::detail {

// Parses a whole safetensors file held in bytes. With an owner, the tensors view bytes and keep
// owner alive; without one, they own copies. Throws FileFormatError naming source.
TensorFile parse_safetensors(std::span<const std::byte> bytes, std::string_view source,
                             const std::shared_ptr<const void>& owner);

// Parses a whole .npy file held in bytes (same ownership rule).
Tensor parse_npy(std::span<const std::byte> bytes, std::string_view source,
                 const std::shared_ptr<const void>& owner);

// A tensor over bytes [begin, begin + size) of a file: a view when owner is set, else a copy.
Tensor file_tensor(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                   std::span<const std::byte> bytes, const std::shared_ptr<const void>& owner);

// For readers that decode a file's bytes into a buffer of their own (a byte-swapped or
// reordered .npy): the tensor takes the buffer over, without a copy, and owns it (is_view()
// is false).
struct TensorAccess {
  // An uninitialized buffer of n bytes, checked against the memory budget (check_allocation
  // naming op); nullptr when n is 0.
  static std::shared_ptr<std::byte[]> allocate(std::size_t n, std::string_view op);
  // Same checks as Tensor::from_bytes; buffer holds exactly `size` bytes.
  static Tensor adopt(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                      std::shared_ptr<std::byte[]> buffer, std::size_t size);
};

// Throws std::invalid_argument naming op and the numeric value when dtype is no listed DType
// (a value cast from an out-of-range number).
void check_dtype(DType dtype, std::string_view op);

}  // namespace posemb::detail
