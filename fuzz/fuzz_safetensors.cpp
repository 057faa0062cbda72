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
    // Invariants of a file that reads: each tensor holds exactly its shape's bytes, all of them
    // inside the input; float tables convert.
    std::size_t total = 0;
    for (const posemb::Tensor& t : f.tensors) {
      const std::uint64_t n = t.element_count();
      if (t.bytes().size() != n * posemb::dtype_size(t.dtype())) std::abort();
      total += t.bytes().size();
      if (t.shape().size() == 2 && posemb::dtype_is_float(t.dtype()) && n <= 4096) {
        const posemb::Matrix<double> m = t.to_matrix<double>();
        if (m.size() != n) std::abort();
      }
    }
    if (total > size) std::abort();
  } catch (const posemb::FileFormatError&) {
  }
  return 0;
}
