// posemb/safetensors.hpp: the Hugging Face safetensors format, read lazily and written safely.
//
//   posemb::TensorFile f = posemb::read_safetensors("model.safetensors");   // maps, validates
//   posemb::Matrix<float> wpe = f.at("wpe.weight").to_matrix<float>();     // touches only wpe
//   f.tensors[0] = posemb::Tensor::from_matrix("wpe.weight", longer);      // replace one tensor
//   posemb::write_safetensors("out.safetensors", f.tensors, f.metadata);   // others pass through
//   posemb::write_safetensors("h.safetensors", f.tensors, {}, posemb::DType::BF16);  // floats
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header, then the raw
// little-endian data. Reading validates the whole header before any data is touched, in one
// pass (time linear in N, memory bounded by the limits below): N at most 100 MB and inside the
// file; a JSON object with unique keys; at most kSafetensorsMaxTensors entries, each with
// exactly dtype (known), shape (at most kSafetensorsMaxRank non-negative integers) and
// data_offsets; names at most kSafetensorsMaxNameBytes; element count times dtype size equal to
// the byte range without overflow; ranges that tile the data section exactly (no overlap, no
// hole, no trailing byte); `__metadata__` a string-to-string object within the metadata limits.
// Every problem throws FileFormatError naming the file.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/tensor_file.hpp"

namespace posemb {

// The header-length bound of the format's reference implementation.
inline constexpr std::size_t kSafetensorsMaxHeaderBytes = 100'000'000;
// Most tensors in one file.
inline constexpr std::size_t kSafetensorsMaxTensors = 262'144;
// Most dimensions of a shape (numpy's own limit is 64 too).
inline constexpr std::size_t kSafetensorsMaxRank = 64;
// Longest tensor name, in bytes.
inline constexpr std::size_t kSafetensorsMaxNameBytes = 1024;
// Most `__metadata__` entries, and most bytes of their keys and values together.
inline constexpr std::size_t kSafetensorsMaxMetadataEntries = 65'536;
inline constexpr std::size_t kSafetensorsMaxMetadataBytes = 16u << 20;

// Reads the header and maps the file (a regular file, opened once, without blocking); the
// tensors view the mapping, which they keep alive, so nothing is decoded or copied. Throws
// FileFormatError for a malformed file or one that is not a regular file, std::system_error
// when it cannot be opened or mapped, MemoryLimitExceeded when parsing the header would exceed
// the memory budget (estimated from N first).
TensorFile read_safetensors(const std::string& path);

// The same from bytes in memory; the tensors own copies of their bytes. source names the bytes
// in error messages.
TensorFile read_safetensors_bytes(std::span<const std::byte> bytes, std::string_view source);

// Writes tensors (in this order) and metadata to path with write_file_atomically. Each tensor is
// written in its own dtype, its bytes unchanged; when `dtype` is given (a float dtype), float
// tensors are converted to it (rounded to nearest even) and other tensors pass through
// unchanged. Everything is validated first (non-empty names within the limits above, unique,
// none called "__metadata__", valid UTF-8; rank, tensor count, metadata within the limits):
// on any error, std::invalid_argument and the file at path is left as it was.
void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors,
                       const Metadata& metadata = {}, std::optional<DType> dtype = std::nullopt);

}  // namespace posemb
