// Numbers that would wrap or overflow on their way into a file, and paths that would be cut
// short: each is refused in one error naming the value and where it is, and nothing is written;
// what is written reads back equal. A small file truncated after it was read changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "file_test_util.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

// Calls f, which must throw E whose message holds every one of `parts`.
template <class E, class F>
void expect_error(F f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong type: " << e.what();
  }
}

PositionTable table_with(std::size_t rows, std::size_t cols, std::size_t r, std::size_t c,
                         float v) {
  PositionTable t;
  t.values = Matrix<float>(rows, cols);
  for (std::size_t i = 0; i < t.values.size(); ++i) t.values.flat()[i] = 0.25f * float(i % 7);
  t.values(r, c) = v;
  return t;
}

// Every finite value past the largest finite F16 / BF16 (at its first rounding to infinity and
// beyond) is refused by every writer that narrows: write_safetensors's dtype and
// save_position_table's (hence resize's and convert's). The largest values that round down stay.
TEST(HostileNumbers, FiniteValuesThatWouldBecomeInfinityAreRefused) {
  test::TempDir dir;
  struct Case {
    DType dtype;
    float bad, good;
    const char* max;
  };
  const Case cases[] = {
      {DType::F16, 65520.0f, 65519.0f, "65504"},
      {DType::F16, -1e30f, -65504.0f, "65504"},
      {DType::BF16, std::numeric_limits<float>::max(), 3.3e38f, "3.38953139e+38"}};
  for (const Case& k : cases) {
    const PositionTable t = table_with(5, 3, 3, 1, k.bad);
    const std::string path = dir.file("t.safetensors");
    expect_error<std::range_error>([&] { save_position_table(path, t, k.dtype); },
                                   {"row 3, column 1", k.max, "infinity"});
    expect_error<std::range_error>(
        [&] { write_safetensors(path, {Tensor::from_matrix("w", t.values)}, {}, k.dtype); },
        {"tensor 'w'", "row 3, column 1", k.max});
    EXPECT_TRUE(dir.entries().empty()) << "nothing written";
    // The largest value that rounds to a finite one is written and reads back finite.
    save_position_table(path, table_with(5, 3, 3, 1, k.good), k.dtype);
    const PositionTable back = load_position_table(path);
    EXPECT_TRUE(std::isfinite(back.values(3, 1)));
    std::filesystem::remove(path);
  }
  // Tensor::astype and to_matrix round as IEEE (and numpy, torch) do: the conversion itself is
  // not a write. Infinities and NaN are not overflow either: they convert as themselves.
  const Tensor big = Tensor::from_matrix("w", table_with(2, 2, 1, 0, 65520.0f).values);
  EXPECT_TRUE(std::isinf(static_cast<float>(big.astype(DType::F16).to_matrix<float16>()(1, 0))));
  const std::vector<float> inf = {std::numeric_limits<float>::infinity(), NAN};
  const Tensor i = test::tensor_of<float>("i", {1, 2}, inf);
  EXPECT_TRUE(std::isinf(static_cast<float>(i.to_matrix<float16>()(0, 0))));
}

// save_position_table writes only what load_position_table reads back, equal.
TEST(HostileNumbers, SavedTablesLoadBackOrAreRefused) {
  test::TempDir dir;
  const std::string path = dir.file("t.safetensors");
  PositionTable t = table_with(4, 2, 0, 0, 1.0f);
  for (const std::size_t len :
       {std::size_t{1'000'000'000'000'000'000}, std::numeric_limits<std::size_t>::max()}) {
    t.training_length = len;
    expect_error<std::invalid_argument>([&] { save_position_table(path, t); },
                                        {"training_length", "largest"});
  }
  t.reserved_rows = 5;
  t.training_length = std::nullopt;
  expect_error<std::invalid_argument>([&] { save_position_table(path, t); }, {"reserved_rows 5"});
  t.reserved_rows = 1;
  const PositionTable nan = table_with(4, 2, 2, 1, NAN);
  expect_error<std::invalid_argument>([&] { save_position_table(path, nan); }, {"NaN", "row 2"});
  EXPECT_TRUE(dir.entries().empty());
  t.training_length = 999'999'999'999'999'999;  // the largest the metadata holds
  save_position_table(path, t);
  const PositionTable back = load_position_table(path);
  EXPECT_EQ(back.training_length, t.training_length);
  EXPECT_EQ(back.reserved_rows, 1u);
  EXPECT_TRUE(back.values == t.values);
}

// A path holding a NUL byte would be cut at it by the system calls: refused by every reader and
// writer before anything is opened or created.
TEST(HostileNumbers, PathsWithANulByteAreRefused) {
  test::TempDir dir;
  const Tensor w = Tensor::from_matrix("w", Matrix<float>(2, 2));
  const std::string real = dir.file("a.safetensors");
  write_safetensors(real, {w});
  const std::string cut = real + std::string("\0.txt", 5);
  expect_error<std::invalid_argument>([&] { (void)read_safetensors(cut); }, {"NUL byte"});
  expect_error<std::invalid_argument>([&] { (void)read_tensor_file(cut); }, {"NUL byte"});
  expect_error<std::invalid_argument>([&] { (void)load_position_table(cut); }, {"NUL byte"});
  const std::string npy = dir.file("b.npy") + std::string("\0zzz", 4);
  expect_error<std::invalid_argument>([&] { (void)read_npy(npy); }, {"read_npy", "NUL byte"});
  expect_error<std::invalid_argument>([&] { write_npy(npy, w); }, {"NUL byte"});
  expect_error<std::invalid_argument>([&] { write_safetensors(cut, {w}); }, {"NUL byte"});
  expect_error<std::invalid_argument>(
      [&] { write_file_atomically(std::string("\0", 1), "op", "x"); }, {"op: ", "offset 0"});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.safetensors"});
}

// Counting position ids in a narrow dtype are widened (and the reason given) rather than wrap
// when the table grows past the dtype's largest value.
TEST(HostileNumbers, NarrowPositionIdsWidenInsteadOfWrapping) {
  for (const DType dt : {DType::U8, DType::I8, DType::I16}) {
    const std::size_t old_rows = 100, new_rows = dt == DType::I16 ? 40000 : 300;
    TensorFile f;
    f.tensors.push_back(Tensor::from_matrix("m.position_embeddings.weight",
                                            table_with(old_rows, 2, 0, 0, 1.0f).values));
    std::vector<std::byte> ids(old_rows * dtype_size(dt), std::byte{0});
    for (std::size_t i = 0; i < old_rows; ++i) ids[i * dtype_size(dt)] = std::byte(i);
    f.tensors.push_back(Tensor::from_bytes("m.position_ids", dt, {1, old_rows}, ids));
    PositionTable t = load_position_table(f, "f", "m.position_embeddings.weight");
    const ResizedFile out =
        replace_position_table(f, resize_table(t, new_rows, ResizeMethod::copy));
    const Tensor& grown = out.tensors[1];
    ASSERT_EQ(grown.dtype(), DType::I64);
    const auto v = test::values_of<std::int64_t>(grown);
    for (std::size_t i = 0; i < new_rows; ++i) ASSERT_EQ(v[i], static_cast<std::int64_t>(i));
    ASSERT_EQ(out.extended.size(), 1u);
    EXPECT_NE(out.extended[0].find("widened from " + std::string(dtype_name(dt)) + " to I64"),
              std::string::npos)
        << out.extended[0];
  }
  // Within the dtype's range, the dtype stays.
  TensorFile f;
  f.tensors.push_back(
      Tensor::from_matrix("m.position_embeddings.weight", table_with(10, 2, 0, 0, 1.0f).values));
  std::vector<std::uint8_t> ids(10);
  for (std::size_t i = 0; i < 10; ++i) ids[i] = static_cast<std::uint8_t>(i);
  f.tensors.push_back(test::tensor_of<std::uint8_t>("m.position_ids", {1, 10}, ids));
  const PositionTable t = load_position_table(f, "f", "m.position_embeddings.weight");
  const ResizedFile out = replace_position_table(f, resize_table(t, 256, ResizeMethod::copy));
  EXPECT_EQ(out.tensors[1].dtype(), DType::U8);
  EXPECT_EQ(test::values_of<std::uint8_t>(out.tensors[1]).back(), 255);
}

// Files of up to 1 MiB are read into memory, not mapped: another process truncating one while
// its tensors are alive cannot make touching them raise SIGBUS.
TEST(HostileNumbers, SmallFilesTruncatedAfterReadingKeepTheirValues) {
  test::TempDir dir;
  for (const std::size_t rows : {std::size_t{4}, std::size_t{8000}}) {  // 64 B, ~1 MiB - header
    const std::string path = dir.file("t.safetensors");
    const Matrix<float> m = Matrix<float>(table_with(rows, 32, 1, 1, 3.0f).values);
    write_safetensors(path, {Tensor::from_matrix("w", m)});
    const TensorFile f = read_safetensors(path);
    const Tensor npy_src = Tensor::from_matrix("", m);
    write_npy(dir.file("t.npy"), npy_src);
    const Tensor n = read_npy(dir.file("t.npy"));
    std::filesystem::resize_file(path, 0);
    std::filesystem::resize_file(dir.file("t.npy"), 0);
    EXPECT_TRUE(f.at("w").to_matrix<float>() == m) << rows;
    EXPECT_TRUE(n.to_matrix<float>() == m) << rows;
  }
}

}  // namespace
}  // namespace posemb
