// src/io/safetensors_header.hpp (internal): the safetensors header, parsed and validated in one
// pass over the JSON (nlohmann's SAX interface: no document tree is built), in time linear in
// its length and memory bounded by the limits of posemb/safetensors.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/tensor_file.hpp"

namespace posemb::detail {

// One tensor of the header: validated (known dtype, byte range matching the shape, inside the
// data section).
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // byte range [begin, end) in the data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data order; the ranges tile the data section
  Metadata metadata;
  std::size_t data_start = 0;  // offset of the data section in the file: 8 + header length
};

// Parses and validates the header of the safetensors file held in `file` (the whole file, so
// that ranges are checked against the data section). Throws FileFormatError naming source, or
// MemoryLimitExceeded when the header is too large for the memory budget.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           std::string_view source);

}  // namespace posemb::detail
