// The Tensor value: construction checks, from_matrix / to_matrix for every element type,
// conversions among the float dtypes against scalar references, what does not compile.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "file_test_util.hpp"
#include "posemb/half.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb {
namespace {

using test::values_of;

// What must not compile: element types a tensor cannot hold.
template <class T>
concept CanReadAs = requires(const Tensor& t) {
  t.template to_matrix<T>();
};
template <class M>
concept CanMakeFrom = requires(const M& m) {
  Tensor::from_matrix("x", m);
};
static_assert(CanReadAs<float> && CanReadAs<std::int64_t> && CanReadAs<bfloat16> &&
              CanReadAs<bool>);
static_assert(!CanReadAs<char> && !CanReadAs<long double> && !CanReadAs<std::string>);
static_assert(CanMakeFrom<Matrix<float>> && CanMakeFrom<MatrixView<float>> &&
              CanMakeFrom<MatrixView<const std::uint8_t>> && CanMakeFrom<Matrix<float16>>);
static_assert(!CanMakeFrom<Matrix<char>> && !CanMakeFrom<Matrix<long double>> &&
              !CanMakeFrom<std::vector<float>>);
static_assert(dtype_of<float> == DType::F32 && dtype_of<std::int64_t> == DType::I64 &&
              dtype_of<bfloat16> == DType::BF16 && dtype_of<bool> == DType::BOOL);

// What points into a temporary tensor or file does not compile: bytes() (the bytes it owns
// are freed with it) and find(); at() and name() and shape() of a temporary give copies.
template <class T>
concept BytesOf = requires(T&& t) {
  std::forward<T>(t).bytes();
};
template <class F>
concept FindIn = requires(F&& f) {
  std::forward<F>(f).find("x");
};
static_assert(BytesOf<Tensor&> && BytesOf<const Tensor&> && !BytesOf<Tensor> &&
              !BytesOf<const Tensor>);
static_assert(FindIn<const TensorFile&> && !FindIn<TensorFile> && !FindIn<const TensorFile>);
static_assert(std::is_same_v<decltype(std::declval<TensorFile>().at("x")), Tensor>);
static_assert(std::is_same_v<decltype(std::declval<const TensorFile&>().at("x")), const Tensor&>);
static_assert(std::is_same_v<decltype(std::declval<Tensor>().shape()), std::vector<std::uint64_t>>);

// A DType outside the enum (a number cast to it) read as F32, 4 bytes: refused naming it.
TEST(Tensor, AnUnlistedDTypeIsRefusedNamingItsValue) {
  const auto bad = static_cast<DType>(200);
  const std::vector<std::byte> four(4);
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { (void)dtype_name(bad); }, [&] { (void)dtype_size(bad); },
           [&] { (void)Tensor::from_bytes("x", bad, {1}, four); },
           [&] { (void)Tensor::view("x", bad, {1}, four, std::make_shared<int>(0)); },
           [&] { (void)Tensor::from_bytes("x", DType::F32, {1}, four).astype(bad); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("dtype 200"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(dtype_is_float(bad));
  EXPECT_EQ(dtype_name(DType::F8_E5M2), "F8_E5M2");  // the last listed one
  EXPECT_EQ(dtype_size(DType::F16), 2u);
}

template <class T>
Matrix<T> filled(std::size_t rows, std::size_t cols) {
  Matrix<T> m(rows, cols);
  for (std::size_t i = 0; i < m.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      m.flat()[i] = i % 3 == 1;
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      m.flat()[i] = T(static_cast<float>(i) * 0.37f - 2.0f);
    } else {
      m.flat()[i] = static_cast<T>(static_cast<long long>(i * 37) - 20);
    }
  }
  return m;
}

template <class T>
void round_trip_through_a_tensor() {
  const Matrix<T> m = filled<T>(5, 3);
  // A strided view: from_matrix copies rows, the tensor is contiguous.
  Matrix<T> wide = filled<T>(5, 7);
  const MatrixView<const T> strided(wide.data() + 2, 5, 3, 7);
  for (const auto& src : {m.cview(), strided}) {
    const Tensor t = Tensor::from_matrix("m", src);
    EXPECT_EQ(t.dtype(), dtype_of<T>);
    EXPECT_EQ(t.shape(), (std::vector<std::uint64_t>{5, 3}));
    EXPECT_EQ(t.bytes().size(), 15 * sizeof(T));
    EXPECT_FALSE(t.is_view());
    const Matrix<T> back = t.to_matrix<T>();
    ASSERT_EQ(back.rows(), 5u);
    for (std::size_t r = 0; r < 5; ++r) {
      EXPECT_EQ(std::memcmp(back.row(r).data(), src.row(r).data(), 3 * sizeof(T)), 0) << r;
    }
  }
}

TEST(Tensor, FromMatrixAndBackForEveryElementType) {
  round_trip_through_a_tensor<float>();
  round_trip_through_a_tensor<double>();
  round_trip_through_a_tensor<float16>();
  round_trip_through_a_tensor<bfloat16>();
  round_trip_through_a_tensor<bool>();
  round_trip_through_a_tensor<std::int8_t>();
  round_trip_through_a_tensor<std::uint8_t>();
  round_trip_through_a_tensor<std::int16_t>();
  round_trip_through_a_tensor<std::uint16_t>();
  round_trip_through_a_tensor<std::int32_t>();
  round_trip_through_a_tensor<std::uint32_t>();
  round_trip_through_a_tensor<std::int64_t>();
  round_trip_through_a_tensor<std::uint64_t>();
}

TEST(Tensor, ConstructionChecksSizesAndOwners) {
  const std::vector<std::byte> six(6);
  EXPECT_THROW((void)Tensor::from_bytes("a", DType::F32, {2}, six), std::invalid_argument);
  EXPECT_NO_THROW((void)Tensor::from_bytes("a", DType::F16, {3}, six));
  EXPECT_NO_THROW((void)Tensor::from_bytes("a", DType::U8, {2, 3}, six));
  EXPECT_THROW((void)Tensor::from_bytes("a", DType::U8, {1ull << 32, 1ull << 32, 2}, six),
               std::invalid_argument);  // the element count overflows 64 bits
  EXPECT_THROW((void)Tensor::view("a", DType::U8, {6}, six, nullptr), std::invalid_argument);
  const auto owner = std::make_shared<std::vector<std::byte>>(6);
  const Tensor v = Tensor::view("a", DType::U8, {6}, *owner, owner);
  EXPECT_TRUE(v.is_view());
  EXPECT_EQ(v.bytes().data(), owner->data());
  const Tensor empty;
  EXPECT_EQ(empty.shape(), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(empty.element_count(), 0u);
  EXPECT_TRUE(empty.bytes().empty());
  const Tensor scalar = Tensor::from_bytes("s", DType::F64, {}, std::vector<std::byte>(8));
  EXPECT_EQ(scalar.element_count(), 1u);
}

TEST(Tensor, ToMatrixRefusesWhatDoesNotConvert) {
  const Tensor ids = test::tensor_of<std::int64_t>("ids", {2, 2}, {1, 2, 3, 4});
  EXPECT_THROW((void)ids.to_matrix<float>(), std::invalid_argument);
  EXPECT_THROW((void)ids.to_matrix<std::int32_t>(), std::invalid_argument);
  EXPECT_EQ(ids.to_matrix<std::int64_t>()(1, 0), 3);
  const Tensor f = test::random_tensor<float>("f", {4}, 1);
  EXPECT_THROW((void)f.to_matrix<float>(), std::invalid_argument);  // 1-D
  EXPECT_THROW((void)test::random_tensor<float>("f", {2, 2}, 1).to_matrix<std::int32_t>(),
               std::invalid_argument);
  EXPECT_THROW((void)ids.astype(DType::F32), std::invalid_argument);
  EXPECT_THROW((void)f.astype(DType::I64), std::invalid_argument);
  // bool: any non-zero byte is true.
  const std::vector<std::uint8_t> raw = {0, 1, 2, 255};
  const Tensor mask = Tensor::from_bytes(
      "mask", DType::BOOL, {2, 2},
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(raw.data()), 4));
  const Matrix<bool> b = mask.to_matrix<bool>();
  EXPECT_FALSE(b(0, 0));
  EXPECT_TRUE(b(0, 1) && b(1, 0) && b(1, 1));
  // A [2^40, 0] tensor converts without a loop over its rows.
  const Tensor tall = Tensor::from_bytes("tall", DType::F32, {1ull << 40, 0}, {});
  EXPECT_EQ(tall.to_matrix<float>().rows(), 1ull << 40);
}

// Every float16 / bfloat16 pattern widens exactly to float and double.
TEST(Tensor, HalfTypesWidenExactly) {
  std::vector<std::uint16_t> bits(65536);
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint16_t>(i);
  for (DType d : {DType::F16, DType::BF16}) {
    const Tensor t = Tensor::from_bytes(
        "h", d, {256, 256},
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bits.data()), 131072));
    const Matrix<float> f = t.to_matrix<float>();
    const Matrix<double> g = t.to_matrix<double>();
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const float want =
          d == DType::F16 ? detail::f16_to_f32(bits[i]) : detail::bf16_to_f32(bits[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(f.flat()[i]) && std::isnan(g.flat()[i])) << i;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(f.flat()[i]), std::bit_cast<std::uint32_t>(want))
            << i;
        ASSERT_EQ(g.flat()[i], static_cast<double>(want)) << i;
      }
    }
  }
}

// Reference: the 16-bit value nearest to d, ties to even, found by bisection over the positive
// patterns (ordered by value) and exact distances in long double (64-bit significand). Past the
// largest finite value, infinity stands at 2^(emax + 1), as IEEE rounding places it.
template <class H>
std::uint16_t nearest_even_reference(double d) {
  constexpr bool half = std::is_same_v<H, float16>;
  constexpr std::uint16_t inf = half ? 0x7c00 : 0x7f80;
  if (std::isnan(d)) return H(static_cast<float>(d)).bits();
  const auto value = [](std::uint16_t b) -> long double {
    if (b == inf) return half ? 65536.0L : 0x1p128L;
    return static_cast<float>(H::from_bits(b));
  };
  const long double a = std::fabs(static_cast<long double>(d));
  std::uint16_t lo = 0;  // the largest pattern whose value is <= a
  if (std::isinf(a) || value(inf) <= a) {
    lo = inf;
  } else {
    std::uint16_t hi = inf;
    while (hi - lo > 1) {
      const auto mid = static_cast<std::uint16_t>((lo + hi) / 2);
      (value(mid) <= a ? lo : hi) = mid;
    }
  }
  std::uint16_t pick = lo;
  if (lo != inf && value(lo) != a) {
    const long double dl = a - value(lo);
    const long double dh = value(static_cast<std::uint16_t>(lo + 1)) - a;
    if (dh < dl || (dh == dl && (lo & 1u) != 0)) pick = static_cast<std::uint16_t>(lo + 1);
  }
  return static_cast<std::uint16_t>(pick | (std::signbit(d) ? 0x8000u : 0u));
}

// F64 -> F16 and F64 -> BF16 round once (never through a float rounded to nearest first).
TEST(Tensor, DoubleNarrowsToHalfTypesInOneRounding) {
  std::mt19937_64 rng(99);
  std::vector<double> v = {0.0, -0.0, 1.0, 65504.0, 65519.999, 65520.0, 1e300, -1e300, 1e-300,
                           std::numeric_limits<double>::infinity(), 0x1p-25, 0x1.0000000001p-25,
                           // Just above a float16 midpoint, below the float rounding of it:
                           // rounding to float first would land on the midpoint, then to even.
                           1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40, 0x1p-134 + 0x1p-170,
                           3.4e38, 3.3961e38};
  while (v.size() < 4000) {
    // Doubles near 16-bit midpoints (the hard cases) and random magnitudes.
    const double base = std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024.0,
                                   static_cast<int>(rng() % 40) - 20);
    const double mid = base + std::ldexp(1.0, std::ilogb(base) - (rng() % 2 ? 11 : 8));
    v.push_back(std::nextafter(mid, rng() % 2 ? 0.0 : 1e308) * (rng() % 2 ? 1 : -1));
  }
  const Tensor t = Tensor::from_bytes(
      "d", DType::F64, {v.size() / 2, 2},
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size() * 8));
  const auto h = values_of<std::uint16_t>(t.astype(DType::F16));
  const auto b = values_of<std::uint16_t>(t.astype(DType::BF16));
  const Matrix<float16> hm = t.to_matrix<float16>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(h[i], nearest_even_reference<float16>(v[i])) << v[i];
    ASSERT_EQ(b[i], nearest_even_reference<bfloat16>(v[i])) << v[i];
    ASSERT_EQ(hm.flat()[i].bits(), h[i]);
  }
  // F64 -> F32 is the C++ conversion (round to nearest even).
  const auto f = values_of<float>(t.astype(DType::F32));
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(f[i], static_cast<float>(v[i])) << i;
}

}  // namespace
}  // namespace posemb
