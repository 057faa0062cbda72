#include "element_convert.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace posemb::detail {
namespace {

template <class Dst, class Src>
Dst convert_one(Src v) noexcept {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (std::is_same_v<Dst, double> || std::is_same_v<Dst, float>) {
    if constexpr (std::is_same_v<Src, double>) {
      return static_cast<Dst>(v);  // F64 -> F32 rounds to nearest even
    } else {
      return static_cast<Dst>(static_cast<float>(v));  // exact
    }
  } else if constexpr (std::is_same_v<Src, double>) {
    return Dst(round_to_odd_float(v));  // F64 -> F16 / BF16 in one rounding
  } else {
    return Dst(static_cast<float>(v));  // exact widening to float, then one rounding
  }
}

template <class T>
const char* dtype_label() {
  if constexpr (std::is_same_v<T, float16>) return "F16";
  if constexpr (std::is_same_v<T, bfloat16>) return "BF16";
  if constexpr (std::is_same_v<T, float>) return "F32";
  return "F64";
}

template <class Dst>
[[noreturn]] void overflow(double v, std::size_t i, const ConvertSite& site) {
  const std::size_t e = site.first + i;
  const std::string where = site.cols == 0 ? "element " + std::to_string(e)
                                           : "row " + std::to_string(e / site.cols) + ", column " +
                                                 std::to_string(e % site.cols);
  char value[32];
  std::snprintf(value, sizeof value, "%.9g", v);
  const char* max = std::is_same_v<Dst, float16>    ? "65504"
                    : std::is_same_v<Dst, bfloat16> ? "3.38953139e+38"
                                                    : "3.40282347e+38";
  throw std::range_error(std::string(site.what) + ": the value " + value + " at " + where +
                         " is beyond the largest finite " + dtype_label<Dst>() + " (" + max +
                         ") and would be stored as infinity; scale it or keep a wider dtype");
}

template <class Src, class Dst>
void run(const std::byte* src, Dst* dst, std::size_t n, const ConvertSite& site) {
  if constexpr (std::is_same_v<Src, Dst>) {
    if (n != 0) std::memcpy(static_cast<void*>(dst), src, n * sizeof(Dst));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      Src v;
      std::memcpy(static_cast<void*>(&v), src + i * sizeof(Src), sizeof(Src));
      dst[i] = convert_one<Dst>(v);
      if constexpr (sizeof(Dst) < sizeof(Src) || std::is_same_v<Dst, float16>) {
        // Narrowing (F16 from BF16 too): for a writer, a finite value must stay finite.
        const double got = static_cast<double>(dst[i]);
        if (site.refuse_overflow && std::isinf(got) && !std::isinf(static_cast<double>(v))) {
          overflow<Dst>(static_cast<double>(v), i, site);
        }
      }
    }
  }
}

}  // namespace

template <class Dst>
void convert_floats(DType from, const std::byte* src, Dst* dst, std::size_t n,
                    const ConvertSite& site) {
  switch (from) {
    case DType::F16:
      run<float16>(src, dst, n, site);
      return;
    case DType::BF16:
      run<bfloat16>(src, dst, n, site);
      return;
    case DType::F32:
      run<float>(src, dst, n, site);
      return;
    case DType::F64:
      run<double>(src, dst, n, site);
      return;
    default:
      return;  // callers check dtype_is_float first
  }
}

void check_finite_in(DType to, MatrixView<const float> m, std::string_view what) {
  std::vector<float16> h;
  std::vector<bfloat16> b;
  for (std::size_t r = 0; r < m.rows(); ++r) {
    const auto* row = reinterpret_cast<const std::byte*>(m.row(r).data());
    const ConvertSite site{what, r * m.cols(), m.cols(), true};
    if (to == DType::F16) {
      h.resize(m.cols());
      convert_floats(DType::F32, row, h.data(), m.cols(), site);
    } else if (to == DType::BF16) {
      b.resize(m.cols());
      convert_floats(DType::F32, row, b.data(), m.cols(), site);
    }  // F32 and F64 hold every float
  }
}

template void convert_floats<float>(DType, const std::byte*, float*, std::size_t,
                                    const ConvertSite&);
template void convert_floats<double>(DType, const std::byte*, double*, std::size_t,
                                     const ConvertSite&);
template void convert_floats<float16>(DType, const std::byte*, float16*, std::size_t,
                                      const ConvertSite&);
template void convert_floats<bfloat16>(DType, const std::byte*, bfloat16*, std::size_t,
                                       const ConvertSite&);

}  // namespace posemb::detail
