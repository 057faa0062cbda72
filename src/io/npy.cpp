#include "posemb/npy.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "element_convert.hpp"
#include "mapped_file.hpp"
#include "posemb/atomic_file.hpp"
#include "readers.hpp"

namespace posemb {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes
constexpr std::size_t kMaxRank = 64;

// numpy's descr of each dtype .npy can hold (1-byte types have no byte order: '|').
struct NpyType {
  std::string_view descr;
  DType dtype;
};
constexpr std::array<NpyType, 12> kNpyTypes = {{{"<f2", DType::F16},
                                                {"<f4", DType::F32},
                                                {"<f8", DType::F64},
                                                {"|b1", DType::BOOL},
                                                {"|i1", DType::I8},
                                                {"|u1", DType::U8},
                                                {"<i2", DType::I16},
                                                {"<u2", DType::U16},
                                                {"<i4", DType::I32},
                                                {"<u4", DType::U32},
                                                {"<i8", DType::I64},
                                                {"<u8", DType::U64}}};

std::optional<DType> dtype_of_descr(std::string_view descr) {
  for (const auto& t : kNpyTypes) {
    if (t.descr == descr) return t.dtype;
    // '<' for a 1-byte type means the same as '|'.
    if (t.descr[0] == '|' && descr.size() == 3 && descr[0] == '<' &&
        descr.substr(1) == t.descr.substr(1)) {
      return t.dtype;
    }
  }
  return std::nullopt;
}

// A descr's dtype, and whether its elements are big-endian ('>' before a type of more than one
// byte: numpy writes it for an array of non-native byte order, as a.astype('>f4') is).
struct NpyDescr {
  DType dtype;
  bool big_endian;
};
std::optional<NpyDescr> parse_descr(std::string_view descr) {
  if (const auto d = dtype_of_descr(descr)) return NpyDescr{*d, false};
  if (descr.size() == 3 && descr[0] == '>') {
    if (const auto d = dtype_of_descr("<" + std::string(descr.substr(1)))) {
      return NpyDescr{*d, dtype_size(*d) > 1};
    }
  }
  return std::nullopt;
}

// One K-byte item, its bytes reversed when kSwap (big-endian to little-endian).
template <std::size_t K, bool kSwap>
void copy_item(std::byte* dst, const std::byte* src) {
  if constexpr (kSwap) {
    std::reverse_copy(src, src + K, dst);
  } else {
    std::memcpy(dst, src, K);
  }
}

// The data of a .npy file (n items) in posemb's layout, C order and little-endian, written to
// out in one pass: reordered from Fortran order when `reorder`, each item byte-swapped when
// kSwap. The element (i0, ..., in-1) of a Fortran-order array of shape (d0, ..., dn-1) sits at
// i0 + d0 * (i1 + d1 * (i2 + ...)). Two dimensions (a table saved as np.save(path, a.T) of a C
// array, or from a column-major program) are a transpose, done in tiles so that both sides stay
// in cache; more go element by element.
template <std::size_t K, bool kSwap>
void decode_items(const std::byte* in, std::byte* out, std::size_t n,
                  const std::vector<std::uint64_t>& shape, bool reorder) {
  const std::size_t rank = shape.size();
  if (!reorder) {
    for (std::size_t i = 0; i < n; ++i) copy_item<K, kSwap>(out + i * K, in + i * K);
    return;
  }
  if (rank == 2) {
    const auto rows = static_cast<std::size_t>(shape[0]);
    const auto cols = static_cast<std::size_t>(shape[1]);
    constexpr std::size_t kTile = 32;
    for (std::size_t i0 = 0; i0 < rows; i0 += kTile) {
      const std::size_t i1 = std::min(rows, i0 + kTile);
      for (std::size_t j0 = 0; j0 < cols; j0 += kTile) {
        const std::size_t j1 = std::min(cols, j0 + kTile);
        for (std::size_t i = i0; i < i1; ++i) {
          for (std::size_t j = j0; j < j1; ++j) {
            copy_item<K, kSwap>(out + (i * cols + j) * K, in + (j * rows + i) * K);
          }
        }
      }
    }
    return;
  }
  // The prefix (i0, ..., in-2) in C order, its Fortran offset kept as it counts; the last index
  // strides by the product of the others.
  const auto last = static_cast<std::size_t>(shape[rank - 1]);
  std::size_t prefix_count = 1;
  std::vector<std::size_t> stride(rank - 1), index(rank - 1, 0);
  for (std::size_t k = 0; k + 1 < rank; ++k) {
    stride[k] = prefix_count;
    prefix_count *= static_cast<std::size_t>(shape[k]);
  }
  std::size_t offset = 0;
  for (std::size_t p = 0; p < prefix_count; ++p) {
    for (std::size_t j = 0; j < last; ++j) {
      copy_item<K, kSwap>(out + (p * last + j) * K, in + (offset + j * prefix_count) * K);
    }
    for (std::size_t k = rank - 1; k-- > 0;) {  // next prefix: the last index of it fastest
      offset += stride[k];
      if (++index[k] < shape[k]) break;
      offset -= index[k] * stride[k];
      index[k] = 0;
    }
  }
}

template <std::size_t K>
void decode_sized(std::span<const std::byte> data, std::byte* out,
                  const std::vector<std::uint64_t>& shape, bool reorder, bool swap) {
  if (swap) return decode_items<K, true>(data.data(), out, data.size() / K, shape, reorder);
  decode_items<K, false>(data.data(), out, data.size() / K, shape, reorder);
}

// decode_items for items of `item` bytes (1, 2, 4 or 8).
void decode_data(std::span<const std::byte> data, std::byte* out, std::size_t item,
                 const std::vector<std::uint64_t>& shape, bool reorder, bool swap) {
  switch (item) {
    case 1:
      return decode_sized<1>(data, out, shape, reorder, swap);
    case 2:
      return decode_sized<2>(data, out, shape, reorder, swap);
    case 4:
      return decode_sized<4>(data, out, shape, reorder, swap);
    default:
      return decode_sized<8>(data, out, shape, reorder, swap);
  }
}

std::optional<std::string_view> descr_of_dtype(DType d) {
  for (const auto& t : kNpyTypes) {
    if (t.dtype == d) return t.descr;
  }
  return std::nullopt;
}

// A cursor over the header text: the Python dict literal numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw FileFormatError(source_,
                          ".npy header " + problem + " (header: " + quote_untrusted(s_, 120) + ")");
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool peek(char c) {
    ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "' at byte " + std::to_string(i_));
    ++i_;
  }
  std::string string() {
    ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) {
      fail("expected a quoted string at byte " + std::to_string(i_));
    }
    const char q = s_[i_++];
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("has an escaped string, which posemb does not accept");
      ++i_;
    }
    if (i_ >= s_.size()) fail("has an unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    ws();
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("expected True or False at byte " + std::to_string(i_));
  }
  std::uint64_t integer() {
    ws();
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') {
      fail("expected a non-negative integer at byte " + std::to_string(i_));
    }
    std::uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const auto d = static_cast<std::uint64_t>(s_[i_] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
        fail("has a shape entry that overflows 64 bits");
      }
      v = v * 10 + d;
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long
    return v;
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> v;
    while (!peek(')')) {
      if (v.size() >= kMaxRank) {
        fail("has a shape of more than " + std::to_string(kMaxRank) + " dimensions");
      }
      v.push_back(integer());
      if (!peek(',')) break;
      ++i_;
    }
    expect(')');
    return v;
  }
  bool at_end() {
    ws();
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  std::string_view source_;
  std::size_t i_ = 0;
};

std::uint32_t load_le(const std::byte* p, int n) {
  std::uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint32_t>(p[k]);
  return v;
}

}  // namespace

namespace detail {

Tensor parse_npy(std::span<const std::byte> bytes, std::string_view source,
                 const std::shared_ptr<const void>& owner) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    throw FileFormatError(source,
                          "not a .npy file (no \\x93NUMPY magic, or shorter than 10 bytes)");
  }
  const auto major = static_cast<unsigned>(bytes[6]);
  const auto minor = static_cast<unsigned>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    throw FileFormatError(source, ".npy format version " + std::to_string(major) + "." +
                                      std::to_string(minor) +
                                      " is not supported (posemb reads 1.0, 2.0 and 3.0)");
  }
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (bytes.size() < prefix) {
    throw FileFormatError(source, "the file ends inside the .npy header length");
  }
  const std::size_t hlen = load_le(bytes.data() + 8, major == 1 ? 2 : 4);
  if (hlen > kNpyMaxHeaderBytes) {
    throw FileFormatError(source, ".npy header length " + std::to_string(hlen) + " exceeds the " +
                                      std::to_string(kNpyMaxHeaderBytes) + "-byte limit");
  }
  if (hlen > bytes.size() - prefix) {
    throw FileFormatError(source, ".npy header length " + std::to_string(hlen) + " but only " +
                                      std::to_string(bytes.size() - prefix) +
                                      " bytes follow (truncated file?)");
  }
  HeaderParser p(std::string_view(reinterpret_cast<const char*>(bytes.data()) + prefix, hlen),
                 source);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::uint64_t>> shape;
  p.expect('{');
  while (!p.peek('}')) {
    const std::string key = p.string();
    p.expect(':');
    if (key == "descr" && !descr) {
      descr = p.string();
    } else if (key == "fortran_order" && !fortran) {
      fortran = p.boolean();
    } else if (key == "shape" && !shape) {
      shape = p.tuple();
    } else {
      p.fail("has an unexpected or repeated key " + quote_untrusted(key, 40));
    }
    if (!p.peek(',')) break;
    p.expect(',');
  }
  p.expect('}');
  if (!p.at_end()) p.fail("has text after the dict");
  if (!descr || !fortran || !shape) p.fail("lacks one of 'descr', 'fortran_order', 'shape'");

  const std::optional<NpyDescr> type = parse_descr(*descr);
  if (!type) {
    throw FileFormatError(source, ".npy dtype " + quote_untrusted(*descr, 40) +
                                      " is not supported (posemb reads <f2 <f4 <f8, |b1, "
                                      "|i1 |u1, <i2 <u2 <i4 <u4 <i8 <u8, and the same with >)");
  }
  const DType dtype = type->dtype;
  std::uint64_t count = 1;
  for (std::uint64_t d : *shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / 8 / d) {
      throw FileFormatError(source, ".npy shape " + shape_string(*shape) + " overflows 64 bits");
    }
    count *= d;
  }
  const std::uint64_t need = count * dtype_size(dtype);
  const std::uint64_t have = bytes.size() - prefix - hlen;
  if (need != have) {
    throw FileFormatError(source, ".npy header promises " + std::to_string(need) +
                                      " bytes of data (shape " + shape_string(*shape) + ", " +
                                      std::string(dtype_name(dtype)) + ") but the file holds " +
                                      std::to_string(have));
  }
  const std::span<const std::byte> data(bytes.data() + prefix + hlen,
                                        static_cast<std::size_t>(need));
  const bool reorder =
      *fortran && std::count_if(shape->begin(), shape->end(), [](auto d) { return d > 1; }) > 1;
  if (need == 0 || (!reorder && !type->big_endian)) {
    return file_tensor("", dtype, std::move(*shape), data, owner);
  }
  auto buffer = TensorAccess::allocate(data.size(), "read_npy");
  decode_data(data, buffer.get(), dtype_size(dtype), *shape, reorder, type->big_endian);
  return TensorAccess::adopt("", dtype, std::move(*shape), std::move(buffer), data.size());
}

}  // namespace detail

Tensor read_npy_bytes(std::span<const std::byte> bytes, std::string_view source) {
  return detail::parse_npy(bytes, source, nullptr);
}

Tensor read_npy(const std::string& path) {
  const auto file = detail::MappedFile::open(path, "read_npy");
  return detail::parse_npy(file->bytes(), path, file);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  detail::check_path(path, "write_npy");
  const std::optional<std::string_view> descr = descr_of_dtype(tensor.dtype());
  if (!descr) {
    throw std::invalid_argument("write_npy: " + quote_untrusted(path) + ": dtype " +
                                std::string(dtype_name(tensor.dtype())) +
                                " cannot be written as .npy (numpy has no such type; convert "
                                "with Tensor::astype(DType::F32) first)");
  }
  // np.load makes the array's shape before its data, and numpy refuses a shape whose itemsize
  // times the product of its non-zero dimensions passes 2^63 - 1 ("array is too big"), even
  // when a zero makes the array empty ([2^62, 0] of F32): such a file would not load.
  constexpr std::uint64_t kNumpyMaxBytes = std::numeric_limits<std::int64_t>::max();
  std::uint64_t extent = dtype_size(tensor.dtype());
  for (const std::uint64_t d : tensor.shape()) {
    if (d != 0 && extent > kNumpyMaxBytes / d) {
      throw std::invalid_argument(
          "write_npy: " + quote_untrusted(path) + ": shape " + shape_string(tensor.shape()) +
          " of " + std::string(dtype_name(tensor.dtype())) +
          " is one numpy cannot load: its item size times its non-zero dimensions passes 2^63 - "
          "1 bytes, numpy's limit even for an empty array");
    }
    if (d != 0) extent *= d;
  }
  std::string dict = "{'descr': '";
  dict += *descr;
  dict += "', 'fortran_order': False, 'shape': (";
  const auto& shape = tensor.shape();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  std::size_t prefix = 10;
  std::size_t total = prefix + dict.size() + 1;
  if (total - prefix > 65535) {
    prefix = 12;
    total = prefix + dict.size() + 1;
  }
  const std::size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  const std::size_t hlen = dict.size();
  write_file_atomically(path, "write_npy", [&](FileSink& sink) {
    sink.write(kMagic, 6);
    const unsigned char ver[2] = {static_cast<unsigned char>(prefix == 10 ? 1 : 2), 0};
    sink.write(ver, 2);
    const unsigned char len[4] = {static_cast<unsigned char>(hlen & 0xff),
                                  static_cast<unsigned char>((hlen >> 8) & 0xff),
                                  static_cast<unsigned char>((hlen >> 16) & 0xff),
                                  static_cast<unsigned char>((hlen >> 24) & 0xff)};
    sink.write(len, prefix - 8);
    sink.write(dict.data(), dict.size());
    sink.write(tensor.bytes().data(), tensor.bytes().size());
  });
}

namespace {

// Throws std::range_error when a finite element of t would be infinite in Dst (blocks of the
// conversion with the writers' check; nothing kept).
template <class Dst>
void check_stays_finite(const Tensor& t, const std::string& what) {
  constexpr std::size_t kBlock = 4096;
  const std::size_t n = static_cast<std::size_t>(t.element_count());
  const std::size_t size = dtype_size(t.dtype());
  const std::size_t cols = t.shape().size() >= 2 ? static_cast<std::size_t>(t.shape().back()) : 0;
  Dst scratch[kBlock];
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    detail::convert_floats(t.dtype(), t.bytes().data() + i * size, scratch, m,
                           detail::ConvertSite{what, i, cols, true});
  }
}

}  // namespace

void write_npy(const std::string& path, const Tensor& tensor, DType dtype) {
  detail::check_path(path, "write_npy");
  if (dtype_is_float(tensor.dtype()) && dtype_is_float(dtype) && dtype != tensor.dtype()) {
    const std::string what = "write_npy: " + quote_untrusted(path) + ": tensor " +
                             quote_untrusted(tensor.name()) + " as " +
                             std::string(dtype_name(dtype));
    switch (dtype) {
      case DType::F16:
        check_stays_finite<float16>(tensor, what);
        break;
      case DType::BF16:
        check_stays_finite<bfloat16>(tensor, what);
        break;
      case DType::F32:
        check_stays_finite<float>(tensor, what);
        break;
      default:
        break;  // F64 holds every float
    }
  }
  write_npy(path, tensor.astype(dtype));  // astype refuses what is not a float dtype
}

}  // namespace posemb
