// libFuzzer target: read_safetensors_bytes on arbitrary bytes. A malformed input must end in
// FileFormatError; anything else (a crash, a sanitizer report, another exception, an
// allocation beyond the input's size) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "posemb/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const posemb::TensorFile f = posemb::read_safetensors_bytes(bytes, "<fuzz>");
    // Invariants of a file that reads: decoded values match the shapes and fit in the input.
    std::size_t total = 0;
    for (const posemb::Tensor& t : f.tensors) {
      const std::uint64_t n = t.element_count();
      if (t.has_values() &&
          (t.dtype == posemb::DType::F64 ? t.values_f64.size() : t.values.size()) != n) {
        std::abort();
      }
      total += static_cast<std::size_t>(n * posemb::dtype_size(t.dtype));
    }
    if (total > size) std::abort();
  } catch (const posemb::FileFormatError&) {
  }
  return 0;
}
