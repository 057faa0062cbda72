// src/io/element_convert.hpp (internal): conversions among the float dtypes (F16, BF16, F32,
// F64), the one place they are done (Tensor::to_matrix, Tensor::astype, write_safetensors).
// Widening is exact; narrowing rounds to nearest even in a single rounding (F64 -> F16 / BF16
// goes through a float rounded to odd, which makes the second rounding exact).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "posemb/half.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::detail {

// d rounded to a float "to odd": truncated toward zero, with the last bit set when inexact.
// Rounding that float to a format with at most 22 significant bits gives the nearest-even
// rounding of d itself (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
// proved algorithms using rounding to odd", 2008). NaN stays NaN; beyond FLT_MAX gives FLT_MAX
// (odd), which rounds on to infinity.
inline float round_to_odd_float(double d) noexcept {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

// True for the element types the float conversions produce.
template <class T>
inline constexpr bool is_float_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, float16> ||
    std::is_same_v<T, bfloat16>;

// Where converted elements come from, for the error a narrowing overflow throws: `what` names
// the tensor ("Tensor::astype: tensor 'wpe'"), the first element converted is element `first`
// of it, counted row-major over rows of `cols` elements (0: report flat element numbers).
struct ConvertSite {
  std::string_view what = "convert";
  std::size_t first = 0;
  std::size_t cols = 0;
  bool refuse_overflow = false;  // writers: a finite value must stay finite
};

// Converts n elements of float dtype `from` (at src, any alignment) to Dst (float, double,
// float16, bfloat16), written over dst[0, n). A finite value too large for Dst (above 65504 in
// F16, about 3.4e38 in BF16 and F32) rounds to infinity, as IEEE (and numpy, torch) round it;
// with site.refuse_overflow (the file writers) it throws std::range_error instead, naming the
// value and its row and column. NaN and infinities convert as themselves.
template <class Dst>
void convert_floats(DType from, const std::byte* src, Dst* dst, std::size_t n,
                    const ConvertSite& site = {});

// Throws std::range_error (as convert_floats with refuse_overflow) when a finite value of m
// would be infinite in float dtype `to`; `what` names the tensor.
void check_finite_in(DType to, MatrixView<const float> m, std::string_view what);

}  // namespace posemb::detail
