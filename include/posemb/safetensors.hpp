// posemb/safetensors.hpp: the Hugging Face safetensors format, read and written safely.
//
//   // A checkpoint: any number of tensors plus string metadata, written atomically.
//   std::vector<posemb::Tensor> ts = {posemb::Tensor::from_matrix("wpe.weight", wpe),
//                                     posemb::Tensor::from_matrix("wte.weight", wte)};
//   posemb::write_safetensors("ckpt.safetensors", ts, {{"step", "1000"}});
//   posemb::TensorFile f = posemb::read_safetensors("ckpt.safetensors");
//   f.metadata.at("step");                       // "1000"
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header, then the raw
// little-endian data. Reading validates the whole header before any data is touched: N at most
// 100 MB and inside the file, a JSON object with unique keys, known dtypes, non-negative
// integer shapes whose element count times dtype size equals the tensor's byte range (no
// overflow), ranges inside the data section that neither overlap nor leave holes, and string
// metadata. Every problem throws FileFormatError naming the file. Files are mapped (mmap), not
// read whole into memory; only the decoded values are allocated, and never more bytes than the
// file holds.
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

// Reads every tensor and the metadata of a .safetensors file. Throws FileFormatError for a
// malformed file and std::system_error (or FileFormatError) when the file cannot be opened.
TensorFile read_safetensors(const std::string& path);

// The same from bytes in memory; source names the bytes in error messages.
TensorFile read_safetensors_bytes(std::span<const std::byte> bytes, std::string_view source);

// Writes tensors (in this order) and metadata to path, atomically: a temporary file in the same
// directory, fsync, rename. Each tensor is written in its own dtype, or in `dtype` when given
// (F16 / BF16 / F32 round to nearest even; F64 is exact). Everything is validated first (unique
// non-empty names, none called "__metadata__", float dtypes, value counts matching shapes):
// on any error the file at path is left as it was.
void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors,
                       const Metadata& metadata = {}, std::optional<DType> dtype = std::nullopt);

}  // namespace posemb
