// safetensors and .npy: round trips, metadata, dtypes, atomic writes, the malformed-file folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "file_test_util.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/half.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::random_values;
using test::same_bits;
using test::TempDir;

Tensor make_f32(const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t seed) {
  Tensor t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.values = random_values<float>(t.element_count(), seed);
  return t;
}

Tensor make_f64(const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t seed) {
  Tensor t;
  t.name = name;
  t.dtype = DType::F64;
  t.shape = std::move(shape);
  t.values_f64 = random_values<double>(t.element_count(), seed);
  return t;
}

TEST(Safetensors, RoundTripManyTensorsAndMetadataBitExact) {
  TempDir dir;
  std::vector<Tensor> ts = {make_f32("wpe.weight", {17, 5}, 1),
                            make_f64("opt.m", {3, 7}, 2),
                            make_f32("scalar", {}, 3),
                            make_f32("empty", {0, 4}, 4),
                            make_f32("vec", {9}, 5),
                            make_f64("cube", {2, 3, 4}, 6)};
  const Metadata meta = {{"step", "1000"}, {"posemb.training_length", "17"}, {"note", "é ü"}};
  write_safetensors(dir.file("a.safetensors"), ts, meta);
  const TensorFile f = read_safetensors(dir.file("a.safetensors"));
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), ts.size());
  for (const Tensor& t : ts) {
    const Tensor& r = f.at(t.name);
    EXPECT_EQ(r.dtype, t.dtype) << t.name;
    EXPECT_EQ(r.shape, t.shape) << t.name;
    EXPECT_TRUE(same_bits(r.values, t.values)) << t.name;
    EXPECT_TRUE(same_bits(r.values_f64, t.values_f64)) << t.name;
  }
  // File order is the written order (data offsets increase).
  for (std::size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(f.tensors[i].name, ts[i].name);
  EXPECT_THROW((void)f.at("nope"), std::out_of_range);
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  TempDir dir;
  for (std::size_t len = 1; len < 12; ++len) {
    write_safetensors(dir.file("p.safetensors"), {make_f32(std::string(len, 'x'), {1}, len)});
    const std::string bytes = test::read_all(dir.file("p.safetensors"));
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << len;
    EXPECT_EQ(bytes.size(), 8 + n + 4);
  }
}

TEST(Safetensors, WritesRequestedDtypesRoundedToNearestEven) {
  TempDir dir;
  const Tensor t = make_f32("t", {64, 3}, 7);
  for (DType d : {DType::F16, DType::BF16, DType::F64, DType::F32}) {
    write_safetensors(dir.file("d.safetensors"), {t}, {}, d);
    const Tensor r = read_safetensors(dir.file("d.safetensors")).at("t");
    ASSERT_EQ(r.dtype, d);
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const float v = t.values[i];
      float want = v;
      if (d == DType::F16) want = detail::f16_to_f32(detail::f32_to_f16(v));
      if (d == DType::BF16) want = detail::bf16_to_f32(detail::f32_to_bf16(v));
      const double got = d == DType::F64 ? r.values_f64[i] : r.values[i];
      EXPECT_EQ(got, static_cast<double>(want)) << dtype_name(d) << " element " << i;
    }
  }
}

TEST(Safetensors, WriterValidatesBeforeTouchingTheFile) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  test::write_all(path, "old content");
  Tensor bad_count = make_f32("a", {2, 2}, 1);
  bad_count.values.pop_back();
  Tensor f64_missing = make_f64("b", {2}, 2);
  f64_missing.values_f64.clear();
  Tensor int_tensor = make_f32("c", {1}, 3);
  int_tensor.dtype = DType::I64;
  const std::vector<std::vector<Tensor>> cases = {
      {bad_count},
      {f64_missing},
      {int_tensor},
      {make_f32("dup", {1}, 1), make_f32("dup", {1}, 2)},
      {make_f32("__metadata__", {1}, 1)},
      {make_f32("", {1}, 1)},
      {make_f32(std::string("\xff\xfe"), {1}, 1)}};
  for (const auto& c : cases) {
    EXPECT_THROW(write_safetensors(path, c), std::invalid_argument);
    EXPECT_EQ(test::read_all(path), "old content");
  }
  EXPECT_THROW(write_safetensors(path, {make_f32("a", {1}, 1)}, {}, DType::I64),
               std::invalid_argument);
  EXPECT_EQ(test::read_all(path), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"keep.safetensors"});
}

TEST(Safetensors, UndecodedDtypesAreListedNotDecoded) {
  const TensorFile f =
      read_safetensors(std::string(POSEMB_TEST_DATA_DIR) + "/valid/bert_like_f16.safetensors");
  const Tensor& ids = f.at("bert.embeddings.position_ids");
  EXPECT_EQ(ids.dtype, DType::I64);
  EXPECT_FALSE(ids.has_values());
  EXPECT_TRUE(ids.values.empty());
  EXPECT_THROW((void)ids.to_matrix_f32(), std::invalid_argument);
  EXPECT_EQ(f.at("bert.embeddings.position_embeddings.weight").dtype, DType::F16);
  EXPECT_EQ(f.at("bert.embeddings.token_type_embeddings.weight").dtype, DType::BF16);
}

TEST(Npy, RoundTripBitExactF32F64AnyRank) {
  TempDir dir;
  const std::vector<Tensor> ts = {make_f32("", {5, 3}, 1), make_f64("", {4, 2}, 2),
                                  make_f32("", {7}, 3),    make_f64("", {}, 4),
                                  make_f32("", {0, 3}, 5), make_f64("", {2, 1, 3}, 6)};
  for (const Tensor& t : ts) {
    write_npy(dir.file("x.npy"), t);
    const std::string bytes = test::read_all(dir.file("x.npy"));
    const std::size_t data = bytes.size() - t.element_count() * dtype_size(t.dtype);
    EXPECT_EQ(data % 64, 0u) << "data starts 64-byte aligned";
    const Tensor r = read_npy(dir.file("x.npy"));
    EXPECT_EQ(r.dtype, t.dtype);
    EXPECT_EQ(r.shape, t.shape);
    EXPECT_TRUE(same_bits(r.values, t.values));
    EXPECT_TRUE(same_bits(r.values_f64, t.values_f64));
  }
  Tensor h = make_f32("", {2}, 1);
  h.dtype = DType::F16;
  EXPECT_THROW(write_npy(dir.file("h.npy"), h), std::invalid_argument);
}

TEST(Npy, ReadsVersions1To3WrittenByNumpy) {
  const std::string d = std::string(POSEMB_TEST_DATA_DIR) + "/valid/";
  const Tensor v1 = read_npy(d + "v1.npy");
  for (const char* name : {"v2.npy", "v3.npy"}) {
    const Tensor v = read_npy(d + name);
    EXPECT_EQ(v.shape, (std::vector<std::uint64_t>{6, 4})) << name;
    EXPECT_TRUE(same_bits(v.values, v1.values)) << name;
  }
  // The same values as the safetensors file made from the same array.
  const TensorFile st = read_safetensors(d + "gpt2_like.safetensors");
  EXPECT_TRUE(same_bits(st.at("wpe.weight").values, v1.values));
  EXPECT_EQ(read_npy(d + "f64_1d.npy").values_f64, st.at("h.0.attn.bias").values_f64);
}

// Every file in tests/data/malformed is refused with a FileFormatError naming the file and the
// problem (EXPECTED.tsv holds the phrase), both by the format's reader and by
// load_position_table; none goes unlisted.
TEST(Malformed, EveryFileGivesAClearError) {
  const std::string dir = std::string(POSEMB_TEST_DATA_DIR) + "/malformed";
  std::map<std::string, std::string> expected;
  std::ifstream tsv(dir + "/EXPECTED.tsv");
  for (std::string line; std::getline(tsv, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    expected[line.substr(0, tab)] = line.substr(tab + 1);
  }
  ASSERT_GE(expected.size(), 40u);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == "EXPECTED.tsv") continue;
    ++files;
    ASSERT_EQ(expected.count(name), 1u) << name << " is not listed in EXPECTED.tsv";
    const std::string path = e.path().string();
    const bool npy = e.path().extension() == ".npy";
    try {
      if (npy) {
        (void)read_npy(path);
      } else {
        (void)read_safetensors(path);
      }
      ADD_FAILURE() << name << " was read without error";
    } catch (const FileFormatError& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find(path), std::string::npos) << name << ": " << what;
      EXPECT_NE(what.find(expected[name]), std::string::npos)
          << name << ": '" << what << "' lacks '" << expected[name] << "'";
      EXPECT_EQ(err.path(), path);
    }
    EXPECT_THROW((void)load_position_table(path), FileFormatError) << name;
  }
  EXPECT_EQ(files, expected.size());
}

TEST(Malformed, InMemoryReadersNameTheSource) {
  const std::byte junk[3] = {};
  try {
    (void)read_safetensors_bytes(junk, "<memory>");
    FAIL();
  } catch (const FileFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("<memory>"), std::string::npos);
  }
  EXPECT_THROW((void)read_npy_bytes(junk, "<memory>"), FileFormatError);
}

TEST(Files, MissingFileAndDirectoryAreSystemErrors) {
  TempDir dir;
  EXPECT_THROW((void)read_safetensors(dir.file("absent.safetensors")), std::system_error);
  EXPECT_THROW((void)read_npy(dir.path().string()), std::system_error);
}

TEST(AtomicWrite, FailureInTheMiddleLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  write_safetensors(path, {make_f32("a", {3, 3}, 1)});
  const std::string before = test::read_all(path);
  EXPECT_THROW(write_file_atomically(path, "test",
                                     [](FileSink& s) {
                                       const std::string half(5000, 'x');
                                       s.write(half.data(), half.size());
                                       s.flush();
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  EXPECT_EQ(test::read_all(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(AtomicWrite, RenameFailureLeavesNoTemporary) {
  TempDir dir;
  // The target is a non-empty directory: the rename onto it fails after the data is written.
  std::filesystem::create_directories(dir.path() / "target.npy" / "inside");
  try {
    write_npy(dir.file("target.npy"), make_f32("", {4}, 1));
    FAIL() << "rename onto a directory succeeded";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("target.npy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target.npy"});
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "target.npy" / "inside"));
}

TEST(AtomicWrite, ReplacesAnExistingFileWhole) {
  TempDir dir;
  const std::string path = dir.file("t.npy");
  write_npy(path, make_f32("", {1000}, 1));
  write_npy(path, make_f32("", {2}, 2));
  EXPECT_EQ(read_npy(path).shape, (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.npy"});
  EXPECT_THROW(write_npy(dir.file("no/such/dir/t.npy"), make_f32("", {2}, 2)), std::system_error);
}

}  // namespace
}  // namespace posemb
