#include "element_convert.hpp"

#include <cstring>
#include <type_traits>

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

template <class Src, class Dst>
void run(const std::byte* src, Dst* dst, std::size_t n) {
  if constexpr (std::is_same_v<Src, Dst>) {
    if (n != 0) std::memcpy(static_cast<void*>(dst), src, n * sizeof(Dst));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      Src v;
      std::memcpy(static_cast<void*>(&v), src + i * sizeof(Src), sizeof(Src));
      dst[i] = convert_one<Dst>(v);
    }
  }
}

}  // namespace

template <class Dst>
void convert_floats(DType from, const std::byte* src, Dst* dst, std::size_t n) {
  switch (from) {
    case DType::F16:
      run<float16>(src, dst, n);
      return;
    case DType::BF16:
      run<bfloat16>(src, dst, n);
      return;
    case DType::F32:
      run<float>(src, dst, n);
      return;
    case DType::F64:
      run<double>(src, dst, n);
      return;
    default:
      return;  // callers check dtype_is_float first
  }
}

template void convert_floats<float>(DType, const std::byte*, float*, std::size_t);
template void convert_floats<double>(DType, const std::byte*, double*, std::size_t);
template void convert_floats<float16>(DType, const std::byte*, float16*, std::size_t);
template void convert_floats<bfloat16>(DType, const std::byte*, bfloat16*, std::size_t);

}  // namespace posemb::detail
