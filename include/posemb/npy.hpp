// posemb/npy.hpp: NumPy's .npy format (versions 1.0, 2.0 and 3.0).
//
//   posemb::write_npy("wpe.npy", posemb::Tensor::from_matrix("", table));   // np.load reads it
//   posemb::Tensor t = posemb::read_npy("wpe.npy");   // t.shape() == {1024, 768}, DType::F32
//   posemb::Matrix<float> m = t.to_matrix<float>();
//
// dtypes: '<f2' (F16), '<f4' (F32), '<f8' (F64), '|b1' (BOOL), '|i1' '|u1' (I8, U8), '<i2'
// '<u2' '<i4' '<u4' '<i8' '<u8' (I16 ... U64), and the same with '>' (big-endian). Reading
// validates the magic, the version, the header (a Python dict literal with 'descr',
// 'fortran_order' and 'shape' and nothing else, at most kNpyMaxHeaderBytes, shape of at most 64
// dimensions), the dtype and that the data is exactly shape-product x itemsize bytes, before any
// element is read. Errors throw FileFormatError naming the file. A tensor read is always C order
// (row-major) and little-endian, as np.load gives it: Fortran-order and big-endian data are
// decoded into a copy. Writing is C order, little-endian.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "posemb/tensor_file.hpp"

namespace posemb {

// Largest .npy header posemb accepts (numpy's own default limit for safe loading is 10 000).
inline constexpr std::size_t kNpyMaxHeaderBytes = 1 << 20;

// Reads a .npy file (a regular file, opened once without blocking, mapped): the tensor, named
// "", views the mapping, so nothing is copied, unless the file is in Fortran order or
// big-endian; then it owns a decoded copy (checked against the memory budget:
// MemoryLimitExceeded). Throws FileFormatError for a malformed file or
// one that is not a regular file, std::system_error when it cannot be opened or mapped.
Tensor read_npy(const std::string& path);

// The same from bytes in memory; the tensor owns a copy of its bytes. source names the bytes in
// error messages.
Tensor read_npy_bytes(std::span<const std::byte> bytes, std::string_view source);

// Writes tensor (any dtype above: not BF16 or F8, which numpy lacks; any shape) as .npy with
// write_file_atomically: format 1.0 (2.0 when the header needs it), header padded to 64 bytes
// as numpy does. Throws std::invalid_argument, before writing, for a dtype .npy cannot hold and
// for a shape np.load refuses: item size x the product of the non-zero dimensions above 2^63 - 1
// (numpy's limit, which holds for empty arrays too: [2^62, 0] of F32 does not load).
void write_npy(const std::string& path, const Tensor& tensor);

// The same with the float tensor converted to float dtype `dtype` first (F16, F32, F64; rounded
// to nearest even as Tensor::astype), refusing a finite value the dtype would store as infinity
// (70000 in F16, 1e300 in F32) with std::range_error naming it and its row and column, before
// anything is written, as write_safetensors does with its dtype.
void write_npy(const std::string& path, const Tensor& tensor, DType dtype);

}  // namespace posemb
