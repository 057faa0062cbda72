// safetensors and .npy: round trips of every dtype, metadata, conversions, lazy views of the
// mapped file, the malformed-file folder.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "file_test_util.hpp"
#include "posemb/half.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::random_tensor;
using test::same_bits;
using test::TempDir;
using test::tensor_of;
using test::values_of;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes().size() == b.bytes().size() &&
         (a.bytes().empty() ||
          std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0);
}

// One tensor of every safetensors dtype, with awkward shapes.
std::vector<Tensor> one_of_each_dtype() {
  std::vector<Tensor> ts = {random_tensor<float>("wpe.weight", {17, 5}, 1),
                            random_tensor<double>("opt.m", {3, 7}, 2),
                            random_tensor<float>("scalar", {}, 3),
                            random_tensor<float>("empty", {0, 4}, 4),
                            random_tensor<double>("cube", {2, 3, 4}, 6),
                            tensor_of<std::int64_t>("position_ids", {1, 4}, {0, 1, -2, INT64_MAX}),
                            tensor_of<std::uint8_t>("u8", {3}, {0, 7, 255}),
                            tensor_of<std::int8_t>("i8", {2}, {-128, 127}),
                            tensor_of<std::int16_t>("i16", {2}, {-3, 30000}),
                            tensor_of<std::uint16_t>("u16", {1}, {65535}),
                            tensor_of<std::int32_t>("i32", {2}, {INT32_MIN, 5}),
                            tensor_of<std::uint32_t>("u32", {1}, {UINT32_MAX}),
                            tensor_of<std::uint64_t>("u64", {1}, {UINT64_MAX})};
  const std::vector<std::uint8_t> raw = {0, 1, 1, 0};
  const auto raw_bytes =
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  ts.push_back(Tensor::from_bytes("mask", DType::BOOL, {2, 2}, raw_bytes));
  ts.push_back(Tensor::from_bytes("f8a", DType::F8_E4M3, {4}, raw_bytes));
  ts.push_back(Tensor::from_bytes("f8b", DType::F8_E5M2, {4}, raw_bytes));
  ts.push_back(random_tensor<float>("h", {6, 2}, 9).astype(DType::F16));
  ts.push_back(random_tensor<float>("b", {6, 2}, 10).astype(DType::BF16));
  return ts;
}

TEST(Safetensors, RoundTripOfEveryDtypeAndMetadataBitExact) {
  TempDir dir;
  const std::vector<Tensor> ts = one_of_each_dtype();
  const Metadata meta = {{"step", "1000"}, {"posemb.training_length", "17"}, {"note", "é ü"}};
  write_safetensors(dir.file("a.safetensors"), ts, meta);
  const TensorFile f = read_safetensors(dir.file("a.safetensors"));
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const Tensor& r = f.tensors[i];
    EXPECT_EQ(r.name(), ts[i].name()) << "file order is the written order";
    EXPECT_EQ(r.dtype(), ts[i].dtype()) << ts[i].name();
    EXPECT_EQ(r.shape(), ts[i].shape()) << ts[i].name();
    EXPECT_TRUE(same_bytes(r, ts[i])) << ts[i].name();
    EXPECT_TRUE(r.is_view()) << "read_safetensors decodes nothing";
  }
  EXPECT_THROW((void)f.at("nope"), std::out_of_range);
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  TempDir dir;
  for (std::size_t len = 1; len < 12; ++len) {
    write_safetensors(dir.file("p.safetensors"),
                      {random_tensor<float>(std::string(len, 'x'), {1}, len)});
    const std::string bytes = test::read_all(dir.file("p.safetensors"));
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << len;
    EXPECT_EQ(bytes.size(), 8 + n + 4);
  }
}

TEST(Safetensors, ConvertsFloatTensorsRoundedToNearestEvenAndPassesOthersThrough) {
  TempDir dir;
  const Tensor wide = random_tensor<float>("t", {64, 3}, 7);  // holds values near 1e20
  // F16 would store those as infinity: refused (tests/io/test_hostile_numbers.cpp); the rest
  // of the test writes them scaled into F16's range.
  EXPECT_THROW(write_safetensors(dir.file("d.safetensors"), {wide}, {}, DType::F16),
               std::range_error);
  std::vector<float> fit = values_of<float>(wide);
  for (float& v : fit) v = std::fabs(v) < 65504.0f ? v : v * 1e-16f;
  const Tensor t = tensor_of<float>("t", {64, 3}, fit);
  const Tensor ids = tensor_of<std::int64_t>("ids", {1, 3}, {0, 1, 2});
  const std::vector<float> src = values_of<float>(t);
  for (DType d : {DType::F16, DType::BF16, DType::F64, DType::F32}) {
    write_safetensors(dir.file("d.safetensors"), {t, ids}, {}, d);
    const TensorFile f = read_safetensors(dir.file("d.safetensors"));
    const Tensor& r = f.at("t");
    ASSERT_EQ(r.dtype(), d);
    EXPECT_EQ(f.at("ids").dtype(), DType::I64) << "non-float tensors are not converted";
    EXPECT_TRUE(same_bytes(f.at("ids"), ids));
    const Matrix<double> got = r.to_matrix<double>();  // exact from every float dtype
    for (std::size_t i = 0; i < src.size(); ++i) {
      float want = src[i];
      if (d == DType::F16) want = float16(src[i]);
      if (d == DType::BF16) want = bfloat16(src[i]);
      EXPECT_EQ(got.flat()[i], static_cast<double>(want)) << dtype_name(d) << " element " << i;
    }
  }
  EXPECT_THROW(write_safetensors(dir.file("x.safetensors"), {t}, {}, DType::I64),
               std::invalid_argument);
}

// A BERT checkpoint's I64 position_ids buffer survives a rewrite (and a float conversion).
TEST(Safetensors, BertLikeFileRewrittenWithItsIntegerTensor) {
  TempDir dir;
  const TensorFile in =
      read_safetensors(std::string(POSEMB_TEST_DATA_DIR) + "/valid/bert_like_f16.safetensors");
  write_safetensors(dir.file("out.safetensors"), in.tensors, in.metadata, DType::F32);
  const TensorFile out = read_safetensors(dir.file("out.safetensors"));
  ASSERT_EQ(out.tensors.size(), in.tensors.size());
  const Tensor& ids = out.at("bert.embeddings.position_ids");
  EXPECT_EQ(ids.dtype(), DType::I64);
  EXPECT_TRUE(same_bytes(ids, in.at("bert.embeddings.position_ids")));
  EXPECT_EQ(ids.to_matrix<std::int64_t>()(0, 5), 5);
  for (const char* name : {"bert.embeddings.position_embeddings.weight",
                           "bert.embeddings.token_type_embeddings.weight"}) {
    EXPECT_EQ(out.at(name).dtype(), DType::F32);
    EXPECT_EQ(out.at(name).to_matrix<float>(), in.at(name).to_matrix<float>()) << "exact";
  }
}

TEST(Safetensors, WriterValidatesBeforeTouchingTheFile) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  test::write_all(path, "old content");
  const auto t = [](const std::string& name) { return random_tensor<float>(name, {1}, 1); };
  std::vector<Tensor> too_many(kSafetensorsMaxTensors + 1);
  for (std::size_t i = 0; i < too_many.size(); ++i) too_many[i].set_name("t" + std::to_string(i));
  const std::vector<std::uint8_t> one = {1};
  const auto one_byte =
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(one.data()), 1);
  const std::vector<std::vector<Tensor>> cases = {
      {t("dup"), t("dup")},
      {t("__metadata__")},
      {t("")},
      {t(std::string("\xff\xfe"))},
      {t(std::string(kSafetensorsMaxNameBytes + 1, 'n'))},
      {Tensor::from_bytes("rank65", DType::U8, std::vector<std::uint64_t>(65, 1), one_byte)},
      too_many};
  for (const auto& c : cases) {
    EXPECT_THROW(write_safetensors(path, c), std::invalid_argument) << c.front().name();
    EXPECT_EQ(test::read_all(path), "old content");
  }
  EXPECT_THROW(write_safetensors(path, {t("a")}, {{"k", std::string("\xc3")}}),
               std::invalid_argument);
  EXPECT_EQ(test::read_all(path), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"keep.safetensors"});
  // The limits themselves are accepted.
  write_safetensors(
      dir.file("ok.safetensors"),
      {t(std::string(kSafetensorsMaxNameBytes, 'n')),
       Tensor::from_bytes("rank64", DType::U8, std::vector<std::uint64_t>(64, 1), one_byte)});
  EXPECT_EQ(read_safetensors(dir.file("ok.safetensors")).at("rank64").shape().size(), 64u);
}

// Tensors read from a file view its mapping and keep it alive: they outlive the TensorFile
// and the file's name.
TEST(Safetensors, TensorsViewTheMappingAndOutliveTheFile) {
  TempDir dir;
  const Tensor src = random_tensor<float>("wpe.weight", {33, 7}, 5);
  write_safetensors(dir.file("m.safetensors"), {src});
  Tensor kept;
  {
    const TensorFile f = read_safetensors(dir.file("m.safetensors"));
    kept = f.at("wpe.weight");
    EXPECT_TRUE(kept.is_view());
  }
  std::filesystem::remove(dir.file("m.safetensors"));
  EXPECT_TRUE(same_bytes(kept, src));
  EXPECT_EQ(kept.to_matrix<float>(), src.to_matrix<float>());
  // From bytes in memory, the tensors own copies.
  const std::string raw =
      test::read_all(std::string(POSEMB_TEST_DATA_DIR) + "/valid/gpt2_like.safetensors");
  const TensorFile m = read_safetensors_bytes(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(raw.data()), raw.size()),
      "<memory>");
  EXPECT_FALSE(m.at("wpe.weight").is_view());
  EXPECT_NE(m.at("wpe.weight").bytes().data(), reinterpret_cast<const std::byte*>(raw.data()) + 8);
}

TEST(Npy, RoundTripBitExactEveryNumpyDtypeAnyRank) {
  TempDir dir;
  std::vector<Tensor> ts = {random_tensor<float>("", {5, 3}, 1),
                            random_tensor<double>("", {4, 2}, 2),
                            random_tensor<float>("", {7}, 3),
                            random_tensor<double>("", {}, 4),
                            random_tensor<float>("", {0, 3}, 5),
                            random_tensor<double>("", {2, 1, 3}, 6),
                            random_tensor<float>("", {3, 3}, 7).astype(DType::F16)};
  for (const Tensor& t : one_of_each_dtype()) {
    if (!dtype_is_float(t.dtype()) && t.dtype() != DType::F8_E4M3 && t.dtype() != DType::F8_E5M2) {
      ts.push_back(t);
    }
  }
  for (const Tensor& t : ts) {
    write_npy(dir.file("x.npy"), t);
    const std::string bytes = test::read_all(dir.file("x.npy"));
    EXPECT_EQ((bytes.size() - t.bytes().size()) % 64, 0u) << "data starts 64-byte aligned";
    const Tensor r = read_npy(dir.file("x.npy"));
    EXPECT_EQ(r.dtype(), t.dtype());
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_TRUE(same_bytes(r, t)) << dtype_name(t.dtype());
    EXPECT_TRUE(r.is_view());
    EXPECT_EQ(r.name(), "");
  }
  for (DType d : {DType::BF16, DType::F8_E4M3}) {
    const std::vector<std::uint8_t> z(4);
    const Tensor h =
        Tensor::from_bytes("", d, {2},
                           std::span<const std::byte>(reinterpret_cast<const std::byte*>(z.data()),
                                                      2 * dtype_size(d)));
    EXPECT_THROW(write_npy(dir.file("h.npy"), h), std::invalid_argument);
    EXPECT_FALSE(std::filesystem::exists(dir.file("h.npy")));
  }
}

TEST(Npy, ReadsVersions1To3WrittenByNumpy) {
  const std::string d = std::string(POSEMB_TEST_DATA_DIR) + "/valid/";
  const Tensor v1 = read_npy(d + "v1.npy");
  for (const char* name : {"v2.npy", "v3.npy"}) {
    const Tensor v = read_npy(d + name);
    EXPECT_EQ(v.shape(), (std::vector<std::uint64_t>{6, 4})) << name;
    EXPECT_TRUE(same_bytes(v, v1)) << name;
  }
  // The same values as the safetensors file made from the same array.
  const TensorFile st = read_safetensors(d + "gpt2_like.safetensors");
  EXPECT_TRUE(same_bytes(st.at("wpe.weight"), v1));
  EXPECT_TRUE(same_bytes(read_npy(d + "f64_1d.npy"), st.at("h.0.attn.bias")));
  // The same arrays saved by numpy in Fortran order (one of them big-endian) read as the same
  // C-order, little-endian bytes.
  const Tensor f = read_npy(d + "fortran_be.npy");
  EXPECT_EQ(f.shape(), (std::vector<std::uint64_t>{6, 4}));
  EXPECT_TRUE(same_bytes(f, v1));
  const Tensor f3 = read_npy(d + "fortran_3d.npy");
  EXPECT_EQ(f3.shape(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_TRUE(same_bytes(f3, st.at("h.0.attn.bias")));
}

TEST(TensorFiles, ReadTensorFileTellsTheFormatByContent) {
  TempDir dir;
  const std::string d = std::string(POSEMB_TEST_DATA_DIR) + "/valid/";
  std::filesystem::copy_file(d + "v1.npy", dir.file("really_npy.safetensors"));
  std::filesystem::copy_file(d + "gpt2_like.safetensors", dir.file("really_st.npy"));
  const TensorFile a = read_tensor_file(dir.file("really_npy.safetensors"));
  EXPECT_EQ(a.format, TensorFileFormat::npy);
  ASSERT_EQ(a.tensors.size(), 1u);
  EXPECT_EQ(a.tensors[0].shape(), (std::vector<std::uint64_t>{6, 4}));
  const TensorFile b = read_tensor_file(dir.file("really_st.npy"));
  EXPECT_EQ(b.format, TensorFileFormat::safetensors);
  EXPECT_EQ(b.tensors.size(), 2u);
  for (const std::string& junk :
       {std::string(""), std::string("hello world, not a tensor file"),
        test::read_all(std::string(POSEMB_TEST_DATA_DIR) + "/malformed/bad_magic.npy")}) {
    test::write_all(dir.file("junk"), junk);
    try {
      (void)read_tensor_file(dir.file("junk"));
      ADD_FAILURE() << "junk read";
    } catch (const FileFormatError& e) {
      EXPECT_NE(std::string(e.what()).find("neither a .npy nor a safetensors file"),
                std::string::npos)
          << e.what();
    }
  }
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
      EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
      EXPECT_LT(what.size(), 1000u) << what;
    }
    EXPECT_THROW((void)load_position_table(path), FileFormatError) << name;
    EXPECT_THROW((void)read_tensor_file(path), FileFormatError) << name;
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

TEST(Files, MissingFileIsASystemErrorADirectoryIsNotAFile) {
  TempDir dir;
  EXPECT_THROW((void)read_safetensors(dir.file("absent.safetensors")), std::system_error);
  try {
    (void)read_npy(dir.path().string());
    FAIL();
  } catch (const FileFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a directory)"), std::string::npos)
        << e.what();
  }
}

// write_npy with a dtype converts as Tensor::astype, and refuses a finite value the dtype would
// store as infinity before writing (astype itself rounds it to infinity, as numpy does).
TEST(Npy, WriteWithDtypeRefusesOverflowAndConvertsTheRest) {
  TempDir dir;
  Matrix<float> m(2, 3);
  for (std::size_t i = 0; i < m.size(); ++i) m.flat()[i] = 0.25f * static_cast<float>(i);
  m(1, 2) = 70000.0f;
  const Tensor t = Tensor::from_matrix("wpe", m);
  try {
    write_npy(dir.file("h.npy"), t, DType::F16);
    FAIL() << "70000 was written as an F16 infinity";
  } catch (const std::range_error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1, column 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("65504"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("h.npy")));
  EXPECT_TRUE(std::isinf(static_cast<float>(t.astype(DType::F16).to_matrix<float16>()(1, 2))));
  m(1, 2) = 65504.0f;
  write_npy(dir.file("h.npy"), Tensor::from_matrix("wpe", m), DType::F16);
  const Tensor back = read_npy(dir.file("h.npy"));
  ASSERT_EQ(back.dtype(), DType::F16);
  const auto h = back.to_matrix<float>();
  for (std::size_t i = 0; i < m.size(); ++i) EXPECT_EQ(h.flat()[i], m.flat()[i]) << i;
  // F64 -> F32: a value beyond float's range is refused too; F64 holds every float.
  Matrix<double> d(1, 2);
  d(0, 0) = 1.0;
  d(0, 1) = 1e300;
  EXPECT_THROW(write_npy(dir.file("f.npy"), Tensor::from_matrix("x", d), DType::F32),
               std::range_error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("f.npy")));
  write_npy(dir.file("g.npy"), t, DType::F64);
  EXPECT_EQ(read_npy(dir.file("g.npy")).to_matrix<double>()(1, 2), 70000.0);
}

}  // namespace
}  // namespace posemb
