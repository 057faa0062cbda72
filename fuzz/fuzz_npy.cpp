// libFuzzer target: read_npy_bytes on arbitrary bytes. A malformed input must end in
// FileFormatError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "posemb/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const posemb::Tensor t = posemb::read_npy_bytes(bytes, "<fuzz>");
    const std::uint64_t n = t.element_count();
    if (t.bytes().size() != n * posemb::dtype_size(t.dtype()) || t.bytes().size() > size) {
      std::abort();
    }
  } catch (const posemb::FileFormatError&) {
  }
  return 0;
}
