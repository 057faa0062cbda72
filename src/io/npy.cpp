#include "posemb/npy.hpp"

#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "mapped_file.hpp"
#include "posemb/atomic_file.hpp"

namespace posemb {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes

// A cursor over the header text: the Python dict literal numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw FileFormatError(
        source_, ".npy header " + problem + " (header: " + std::string(s_.substr(0, 200)) + ")");
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
      if (v.size() >= 64) fail("has a shape of more than 64 dimensions");
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

Tensor read_npy_bytes(std::span<const std::byte> bytes, std::string_view source) {
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
      p.fail("has an unexpected or repeated key '" + key + "'");
    }
    if (!p.peek(',')) break;
    p.expect(',');
  }
  p.expect('}');
  if (!p.at_end()) p.fail("has text after the dict");
  if (!descr || !fortran || !shape) p.fail("lacks one of 'descr', 'fortran_order', 'shape'");

  Tensor t;
  t.shape = *shape;
  if (*descr == "<f4") {
    t.dtype = DType::F32;
  } else if (*descr == "<f8") {
    t.dtype = DType::F64;
  } else if (*descr == ">f4" || *descr == ">f8") {
    throw FileFormatError(source, ".npy dtype '" + *descr +
                                      "' is big-endian; posemb reads little-endian '<f4' and '<f8' "
                                      "(convert with arr.astype('<f4'))");
  } else {
    throw FileFormatError(
        source, ".npy dtype '" + *descr + "' is not supported (posemb reads '<f4' and '<f8')");
  }
  if (*fortran) {
    throw FileFormatError(source,
                          ".npy data is in Fortran (column-major) order, which posemb does not "
                          "read; save a C-order array (np.save(path, np.ascontiguousarray(a)))");
  }
  std::uint64_t count = 1;
  for (std::uint64_t d : t.shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / 8 / d) {
      throw FileFormatError(source, ".npy shape overflows 64 bits");
    }
    count *= d;
  }
  const std::uint64_t need = count * dtype_size(t.dtype);
  const std::uint64_t have = bytes.size() - prefix - hlen;
  if (need != have) {
    throw FileFormatError(source, ".npy header promises " + std::to_string(need) +
                                      " bytes of data (shape and dtype) but the file holds " +
                                      std::to_string(have));
  }
  const std::byte* data = bytes.data() + prefix + hlen;
  const auto n = static_cast<std::size_t>(count);
  if (t.dtype == DType::F32) {
    t.values.resize(n);
    if (n != 0) std::memcpy(t.values.data(), data, n * 4);
  } else {
    t.values_f64.resize(n);
    if (n != 0) std::memcpy(t.values_f64.data(), data, n * 8);
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  const detail::MappedFile f(path, "read_npy");
  return read_npy_bytes(f.bytes(), path);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const std::string op = "write_npy: '" + path + "': ";
  if (tensor.dtype != DType::F32 && tensor.dtype != DType::F64) {
    throw std::invalid_argument(op + "dtype " + std::string(dtype_name(tensor.dtype)) +
                                " cannot be written as .npy (F32 or F64 only)");
  }
  const std::uint64_t count = tensor.element_count();
  const std::size_t have =
      tensor.dtype == DType::F64 ? tensor.values_f64.size() : tensor.values.size();
  if (have != count) {
    throw std::invalid_argument(op + "the shape has " + std::to_string(count) +
                                " elements but the tensor holds " + std::to_string(have));
  }
  std::string dict = "{'descr': '";
  dict += tensor.dtype == DType::F32 ? "<f4" : "<f8";
  dict += "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
    dict += std::to_string(tensor.shape[i]);
    if (tensor.shape.size() == 1 || i + 1 < tensor.shape.size()) dict += ",";
    if (i + 1 < tensor.shape.size()) dict += " ";
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
    unsigned char len[4] = {static_cast<unsigned char>(hlen & 0xff),
                            static_cast<unsigned char>((hlen >> 8) & 0xff),
                            static_cast<unsigned char>((hlen >> 16) & 0xff),
                            static_cast<unsigned char>((hlen >> 24) & 0xff)};
    sink.write(len, prefix - 8);
    sink.write(dict.data(), dict.size());
    if (tensor.dtype == DType::F32) {
      sink.write(tensor.values.data(), tensor.values.size() * 4);
    } else {
      sink.write(tensor.values_f64.data(), tensor.values_f64.size() * 8);
    }
  });
}

}  // namespace posemb
