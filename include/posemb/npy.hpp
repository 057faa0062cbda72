// posemb/npy.hpp: NumPy's .npy format (versions 1.0, 2.0 and 3.0), little-endian float32
// ('<f4') and float64 ('<f8') in C order.
//
//   posemb::write_npy("wpe.npy", posemb::Tensor::from_matrix("", table));   // np.load reads it
//   posemb::Tensor t = posemb::read_npy("wpe.npy");      // t.shape == {1024, 768}, DType::F32
//
// Reading validates the magic, the version, the header (a Python dict literal with 'descr',
// 'fortran_order' and 'shape' and nothing else), the dtype, the order (Fortran order is refused:
// save with np.ascontiguousarray) and that the data is exactly shape-product x itemsize bytes,
// before any element is read. Errors throw FileFormatError naming the file.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "posemb/tensor_file.hpp"

namespace posemb {

// Largest .npy header posemb accepts (numpy's own default limit for safe loading is 10 000).
inline constexpr std::size_t kNpyMaxHeaderBytes = 1 << 20;

// Reads a .npy file; the tensor's name is "" and its dtype F32 or F64.
Tensor read_npy(const std::string& path);

// The same from bytes in memory; source names the bytes in error messages.
Tensor read_npy_bytes(std::span<const std::byte> bytes, std::string_view source);

// Writes tensor (dtype F32 or F64, any shape) as .npy, format 1.0 (2.0 when the header needs
// it), header padded to 64 bytes as numpy does. Atomic; validated first (dtype, value count).
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace posemb
