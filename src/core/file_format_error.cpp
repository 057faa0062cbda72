// FileFormatError and quote_untrusted (posemb/errors.hpp): messages about bytes from outside.
#include <cstdint>
#include <string>

#include "posemb/errors.hpp"

namespace posemb {
namespace {

// Paths are shown in full up to this many bytes (PATH_MAX is 4096).
constexpr std::size_t kMaxPathBytes = 4096;

void append_hex(std::string& out, unsigned char b) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 0xf];
}

// Length of the well-formed UTF-8 sequence starting at s[i] (1 to 4) and its code point, or 0
// when the bytes there are not UTF-8 (overlong forms, surrogates and values past U+10FFFF
// included).
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  if ((b0 & 0xe0) == 0xc0) {
    n = 2;
    cp = b0 & 0x1fu;
    min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    n = 3;
    cp = b0 & 0x0fu;
    min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    n = 4;
    cp = b0 & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Code points a terminal may act on or that reorder or break the text around them.
bool escaped_code_point(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) ||      // C1 controls (CSI is U+009B)
         cp == 0x2028 || cp == 0x2029 ||    // line and paragraph separators
         (cp >= 0x202a && cp <= 0x202e) ||  // bidi embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069) ||  // bidi isolates
         cp == 0xfeff;                      // zero-width no-break space (BOM)
}

}  // namespace

std::string quote_untrusted(std::string_view text, std::size_t max_bytes) {
  std::string out = "'";
  std::size_t i = 0;
  while (i < text.size()) {
    std::uint32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (i + (n == 0 ? 1 : n) > max_bytes) break;
    if (n == 0) {
      append_hex(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (n == 1) {
      const char c = text[i];
      if (c == '\\' || c == '\'') {
        out += '\\';
        out += c;
      } else if (cp < 0x20 || cp == 0x7f) {
        append_hex(out, static_cast<unsigned char>(c));
      } else {
        out += c;
      }
    } else if (cp <= 0x9f) {  // a C1 control: its two bytes
      for (std::size_t k = 0; k < n; ++k) append_hex(out, static_cast<unsigned char>(text[i + k]));
    } else if (escaped_code_point(cp)) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xf];
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  out += '\'';
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

FileFormatError::FileFormatError(std::string_view path, std::string_view problem)
    : std::runtime_error(quote_untrusted(path, kMaxPathBytes) + ": " + std::string(problem)),
      path_(path),
      problem_(problem) {}

}  // namespace posemb
