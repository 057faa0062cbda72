// resize_table against plain scalar references: copy tiling, interpolation, random rows,
// truncation, sinusoidal rows, reserved rows in place, NaN refused; replace_position_table on
// checkpoints shaped like GPT-2, BERT, RoBERTa, CLIP, ViT and the lab's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "file_test_util.hpp"
#include "posemb/memory.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb {
namespace {

PositionTable make_table(std::size_t reserved, std::size_t positions, std::size_t dim,
                         std::uint64_t seed) {
  PositionTable t;
  t.values = Matrix<float>(reserved + positions, dim);
  const auto v = test::random_values<float>(t.values.size(), seed);
  for (std::size_t i = 0; i < v.size(); ++i) t.values.flat()[i] = std::tanh(v[i]) * 0.1f;
  t.reserved_rows = reserved;
  t.training_length = positions;
  t.source_file = "table.safetensors";
  t.source_tensor = "wpe.weight";
  return t;
}

bool rows_equal_bits(const Matrix<float>& a, std::size_t ra, const Matrix<float>& b,
                     std::size_t rb) {
  return std::memcmp(a.row(ra).data(), b.row(rb).data(), a.cols() * sizeof(float)) == 0;
}

TEST(Resize, CopyTilesTheTrainedRowsAndKeepsReservedRows) {
  for (auto [reserved, old_n, new_n] : {std::tuple<std::size_t, std::size_t, std::size_t>{2, 5, 17},
                                        {0, 4, 4},
                                        {2, 512, 4096},
                                        {1, 1, 3}}) {
    const PositionTable t = make_table(reserved, old_n, 6, old_n);
    const PositionTable r = resize_table(t, new_n, ResizeMethod::copy);
    ASSERT_EQ(r.values.rows(), reserved + new_n);
    EXPECT_EQ(r.reserved_rows, reserved);
    EXPECT_EQ(r.positions(), new_n);
    for (std::size_t i = 0; i < reserved; ++i)
      EXPECT_TRUE(rows_equal_bits(r.values, i, t.values, i));
    for (std::size_t p = 0; p < new_n; ++p) {
      ASSERT_TRUE(rows_equal_bits(r.values, reserved + p, t.values, reserved + p % old_n)) << p;
    }
    EXPECT_NE(r.provenance.find("copy"), std::string::npos);
    EXPECT_EQ(r.training_length, t.training_length);
  }
}

TEST(Resize, InterpolateMatchesScalarReferenceWithExactEndpoints) {
  for (auto [reserved, old_n, new_n] : {std::tuple<std::size_t, std::size_t, std::size_t>{0, 5, 17},
                                        {2, 4, 9},
                                        {2, 512, 2048},
                                        {0, 3, 3},
                                        {0, 1, 4},
                                        {0, 7, 10}}) {
    const std::size_t dim = 5;
    const PositionTable t = make_table(reserved, old_n, dim, 11 + old_n);
    const PositionTable r = resize_table(t, new_n, ResizeMethod::interpolate);
    ASSERT_EQ(r.values.rows(), reserved + new_n);
    for (std::size_t i = 0; i < reserved; ++i)
      EXPECT_TRUE(rows_equal_bits(r.values, i, t.values, i));
    EXPECT_TRUE(rows_equal_bits(r.values, reserved, t.values, reserved));
    if (old_n > 1) {
      EXPECT_TRUE(rows_equal_bits(r.values, reserved + new_n - 1, t.values, reserved + old_n - 1));
    }
    // Reference: x = j (n-1)/(N-1) in long double, linear between floor(x) and floor(x)+1.
    for (std::size_t j = 0; j < new_n; ++j) {
      const long double x = new_n == 1 ? 0.0L
                                       : static_cast<long double>(j) * (old_n - 1) /
                                             static_cast<long double>(new_n - 1);
      const auto i0 = std::min(static_cast<std::size_t>(std::floor(x)), old_n - 1);
      const std::size_t i1 = std::min(i0 + 1, old_n - 1);
      const long double f = x - static_cast<long double>(i0);
      for (std::size_t c = 0; c < dim; ++c) {
        const long double a = t.values(reserved + i0, c);
        const long double b = t.values(reserved + i1, c);
        const long double want = a + f * (b - a);
        const long double mag = std::max(std::fabs(a), std::fabs(b));
        // float rounding of the result plus double rounding inside: 2 float eps of the magnitude.
        const long double tol = 2 * std::numeric_limits<float>::epsilon() * std::max(mag, 1e-30L);
        ASSERT_NEAR(static_cast<double>(r.values(reserved + j, c)), static_cast<double>(want),
                    static_cast<double>(tol))
            << "j " << j << " c " << c;
      }
    }
  }
}

TEST(Resize, RandomKeepsOldRowsBitExactAndIsSeeded) {
  const PositionTable t = make_table(2, 16, 32, 3);
  ResizeOptions o;
  o.stddev = 0.05;
  o.seed = 42;
  const PositionTable a = resize_table(t, 4000, ResizeMethod::random, o);
  const PositionTable b = resize_table(t, 4000, ResizeMethod::random, o);
  EXPECT_EQ(a.values, b.values);  // same seed, same rows
  for (std::size_t r = 0; r < 18; ++r) EXPECT_TRUE(rows_equal_bits(a.values, r, t.values, r));
  o.seed = 43;
  const PositionTable c = resize_table(t, 4000, ResizeMethod::random, o);
  EXPECT_FALSE(rows_equal_bits(a.values, 18, c.values, 18));
  // New rows look like N(0, 0.05): mean and standard deviation over 3984 x 32 draws.
  double sum = 0, sum2 = 0;
  std::size_t n = 0;
  for (std::size_t r = 18; r < a.values.rows(); ++r) {
    for (float v : a.values.row(r)) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
      ++n;
    }
  }
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_LT(std::fabs(mean), 5 * 0.05 / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(sd, 0.05, 0.05 * 0.02);
  EXPECT_NE(a.provenance.find("seed=42"), std::string::npos) << a.provenance;
}

TEST(Resize, RandomUsesTheNamedInitializerForTheNewPositions) {
  const PositionTable t = make_table(2, 8, 6, 3);
  ResizeOptions o;
  o.initializer = "sinusoidal";
  const PositionTable r = resize_table(t, 20, ResizeMethod::random, o);
  ASSERT_EQ(r.values.rows(), 22u);
  // New position p holds the sinusoidal encoding of p, bit for bit.
  const Matrix<float> ref = sinusoidal_positional_encoding(12, 6, 8);
  for (std::size_t p = 8; p < 20; ++p) {
    for (std::size_t c = 0; c < 6; ++c) EXPECT_EQ(r.values(2 + p, c), ref(p - 8, c)) << p;
  }
  o.initializer = "zeros";
  const PositionTable z = resize_table(t, 10, ResizeMethod::random, o);
  for (std::size_t c = 0; c < 6; ++c) EXPECT_EQ(z.values(2 + 9, c), 0.0f);
  EXPECT_EQ(z.values(2 + 7, 0), t.values(2 + 7, 0));
}

TEST(Resize, TruncateKeepsTheFirstPositions) {
  const PositionTable t = make_table(2, 20, 4, 8);
  const PositionTable r = resize_table(t, 7, ResizeMethod::truncate);
  ASSERT_EQ(r.values.rows(), 9u);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_TRUE(rows_equal_bits(r.values, i, t.values, i));
}

TEST(Resize, ProvenanceAccumulates) {
  const PositionTable t = make_table(0, 4, 2, 1);
  const PositionTable a = resize_table(t, 8, ResizeMethod::copy);
  const PositionTable b = resize_table(a, 6, ResizeMethod::truncate);
  EXPECT_NE(b.provenance.find("copy 4 -> 8"), std::string::npos) << b.provenance;
  EXPECT_NE(b.provenance.find("truncate 8 -> 6"), std::string::npos) << b.provenance;
}

TEST(Resize, RefusesBadRequestsAndDamagedTables) {
  const PositionTable t = make_table(2, 8, 3, 1);
  EXPECT_THROW((void)resize_table(t, 4, ResizeMethod::copy), std::invalid_argument);
  EXPECT_THROW((void)resize_table(t, 4, ResizeMethod::interpolate), std::invalid_argument);
  EXPECT_THROW((void)resize_table(t, 9, ResizeMethod::truncate), std::invalid_argument);
  EXPECT_THROW((void)resize_table(t, 0, ResizeMethod::truncate), std::invalid_argument);
  ResizeOptions o;
  o.initializer = "uniform";
  EXPECT_THROW((void)resize_table(t, 16, ResizeMethod::random, o), std::invalid_argument);
  o = {};
  o.stddev = -1;
  EXPECT_THROW((void)resize_table(t, 16, ResizeMethod::random, o), std::invalid_argument);
  EXPECT_THROW((void)parse_resize_method("stretch"), std::invalid_argument);
  EXPECT_EQ(parse_resize_method("interpolate"), ResizeMethod::interpolate);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    PositionTable d = make_table(2, 8, 3, 1);
    d.values(5, 1) = bad;
    try {
      (void)resize_table(d, 16, ResizeMethod::copy);
      FAIL();
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("table.safetensors"), std::string::npos) << m;
      EXPECT_NE(m.find("row 5, column 1"), std::string::npos) << m;
      EXPECT_NE(m.find(std::isnan(bad) ? "NaN" : "infinity"), std::string::npos) << m;
    }
  }
}

// The rows are floats: a standard deviation that is not a positive finite float is refused, and
// one whose draws would overflow float is refused by initialize_table before the draw.
TEST(Resize, RandomRefusesStandardDeviationsThatAreNotFiniteFloats) {
  const PositionTable t = make_table(0, 8, 4, 1);
  ResizeOptions o;
  for (double s : {1e300, 1e39, 1e-300, -0.0, 0.0, static_cast<double>(NAN),
                   std::numeric_limits<double>::infinity()}) {
    o.stddev = s;
    try {
      (void)resize_table(t, 16, ResizeMethod::random, o);
      ADD_FAILURE() << "stddev " << s << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not a positive finite float"), std::string::npos)
          << e.what();
    }
  }
  o.stddev = 3e38;  // a float, but N(0, 3e38) draws overflow to infinity
  try {
    (void)resize_table(t, 4096, ResizeMethod::random, o);
    FAIL() << "infinite rows returned";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("resize_table: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("not finite in float"), std::string::npos) << e.what();
  }
  o.stddev = 1e30;  // large but its draws are finite
  const PositionTable r = resize_table(t, 64, ResizeMethod::random, o);
  for (float v : r.values.flat()) ASSERT_TRUE(std::isfinite(v));
}

TEST(Resize, TablesWithoutColumnsAndHugeResultsAreRefusedBeforeAllocating) {
  PositionTable empty;
  empty.values = Matrix<float>(1ull << 40, 0);
  for (ResizeMethod m : {ResizeMethod::truncate, ResizeMethod::copy}) {
    try {
      (void)resize_table(empty, m == ResizeMethod::copy ? (1ull << 41) : 5, m);
      FAIL();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("at least one column"), std::string::npos) << e.what();
    }
  }
  // 2^32 positions of 768 floats: 12 TiB, refused with the need and the limit.
  const PositionTable t = make_table(0, 4, 768, 1);
  try {
    (void)resize_table(t, 1ull << 32, ResizeMethod::copy);
    FAIL();
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.bytes(), (1ull << 32) * 768 * 4);
    EXPECT_NE(std::string(e.what()).find("resize_table"), std::string::npos) << e.what();
  }
  // With random the freshly drawn table counts too.
  try {
    (void)resize_table(t, 1ull << 31, ResizeMethod::random);
    FAIL();
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.bytes(), 2 * (1ull << 31) * 768 * 4);
  }
}

TEST(Resize, SinusoidalKeepsOldRowsAndScalesTheEncodingToTheirMeanNorm) {
  for (std::size_t reserved : {0u, 2u}) {
    const PositionTable t = make_table(reserved, 9, 6, 21);
    const PositionTable r = resize_table(t, 25, ResizeMethod::sinusoidal);
    ASSERT_EQ(r.values.rows(), reserved + 25);
    for (std::size_t i = 0; i < reserved + 9; ++i) {
      EXPECT_TRUE(rows_equal_bits(r.values, i, t.values, i)) << i;
    }
    // Reference in double: the encoding of positions 9..24, times old mean norm / new mean norm.
    const Matrix<double> enc = [] {
      Matrix<double> e(16, 6);
      sinusoidal_positional_encoding_into(e.view(), 9);
      return e;
    }();
    auto norm = [](auto row) {
      double s = 0;
      for (auto v : row) s += static_cast<double>(v) * static_cast<double>(v);
      return std::sqrt(s);
    };
    double old_norm = 0, new_norm = 0;
    for (std::size_t p = 0; p < 9; ++p) old_norm += norm(t.values.row(reserved + p)) / 9;
    for (std::size_t p = 0; p < 16; ++p) new_norm += norm(enc.row(p)) / 16;
    for (std::size_t p = 0; p < 16; ++p) {
      for (std::size_t c = 0; c < 6; ++c) {
        const double want = enc(p, c) * old_norm / new_norm;
        EXPECT_NEAR(r.values(reserved + 9 + p, c), want, 8 * 6e-8 * (std::fabs(want) + old_norm))
            << p << "," << c;
      }
    }
    double got_norm = 0;
    for (std::size_t p = 9; p < 25; ++p) got_norm += norm(r.values.row(reserved + p)) / 16;
    EXPECT_NEAR(got_norm, old_norm, 1e-5 * old_norm);
    EXPECT_NE(r.provenance.find("sinusoidal 9 -> 25"), std::string::npos) << r.provenance;
  }
  EXPECT_EQ(parse_resize_method("sinusoidal"), ResizeMethod::sinusoidal);
  EXPECT_THROW((void)resize_table(make_table(0, 9, 6, 1), 5, ResizeMethod::sinusoidal),
               std::invalid_argument);
  try {
    (void)parse_resize_method("stretch");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sinusoidal"), std::string::npos) << e.what();
  }
}

// A float (rows, cols) tensor of distinct values.
Tensor float_tensor(const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t seed) {
  return test::random_tensor<float>(name, std::move(shape), seed);
}

Tensor arange(const std::string& name, std::size_t n, std::int64_t offset = 0) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = offset + static_cast<std::int64_t>(i);
  return test::tensor_of<std::int64_t>(name, {1, n}, v);
}

const Tensor& named(const std::vector<Tensor>& ts, const std::string& name) {
  for (const auto& t : ts) {
    if (t.name() == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

// The file resized by copy to `to` positions through the whole-file path, re-read from disk.
struct Resized {
  ResizedFile out;
  TensorFile back;
  PositionTable table;
};
Resized resize_file(const test::TempDir& dir, const std::vector<Tensor>& tensors,
                    const Metadata& meta, std::size_t to, std::size_t reserved = 0) {
  const std::string in = dir.file("in.safetensors"), out = dir.file("out.safetensors");
  write_safetensors(in, tensors, meta);
  const TensorFile f = read_safetensors(in);
  PositionTable t = load_position_table(f, in);
  t.reserved_rows = reserved;
  const PositionTable r = resize_table(t, to, ResizeMethod::copy);
  Resized res{replace_position_table(f, r), {}, {}};
  write_safetensors(out, res.out.tensors, res.out.metadata);
  res.back = read_safetensors(out);
  res.table = load_position_table(out);
  return res;
}

TEST(ReplaceTable, Gpt2KeepsEveryTensorAndReportsTheMasks) {
  test::TempDir dir;
  const std::vector<Tensor> in = {float_tensor("wte.weight", {50, 8}, 1),
                                  float_tensor("wpe.weight", {16, 8}, 2),
                                  float_tensor("h.0.attn.bias", {1, 1, 16, 16}, 3),
                                  float_tensor("h.0.mlp.c_fc.weight", {8, 16}, 4)};
  const Resized r = resize_file(dir, in, {{"format", "pt"}}, 32);
  ASSERT_EQ(r.back.tensors.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.back.tensors[i].name(), in[i].name()) << "order kept";
    if (in[i].name() == "wpe.weight") continue;
    EXPECT_EQ(r.back.tensors[i].shape(), in[i].shape()) << in[i].name();
    EXPECT_TRUE(std::equal(in[i].bytes().begin(), in[i].bytes().end(),
                           r.back.tensors[i].bytes().begin(), r.back.tensors[i].bytes().end()))
        << in[i].name() << ": bytes unchanged";
  }
  EXPECT_EQ(r.back.at("wpe.weight").shape(), (std::vector<std::uint64_t>{32, 8}));
  const Matrix<float> old = in[1].to_matrix<float>();
  for (std::size_t p = 0; p < 32; ++p) {
    EXPECT_TRUE(rows_equal_bits(r.table.values, p, old, p % 16)) << p;
  }
  // The (1, 1, L, L) mask keeps its old length: reported, not changed. The square (8, 16) MLP
  // weight with one dimension of 16 is not reported.
  EXPECT_EQ(r.out.kept_with_old_length, (std::vector<std::string>{"h.0.attn.bias"}));
  EXPECT_TRUE(r.out.extended.empty());
  EXPECT_EQ(r.back.metadata.at("format"), "pt");
  EXPECT_EQ(r.back.metadata.at("posemb.tensor"), "wpe.weight");
  EXPECT_NE(r.back.metadata.at("posemb.provenance").find("copy 16 -> 32"), std::string::npos);
}

TEST(ReplaceTable, BertPositionIdsCountOnAndTokenTypesStayConstant) {
  test::TempDir dir;
  const std::vector<Tensor> in = {
      float_tensor("bert.embeddings.word_embeddings.weight", {30, 8}, 1),
      Tensor::from_matrix("bert.embeddings.position_embeddings.weight",
                          make_table(0, 12, 8, 2).values)
          .astype(DType::F16),
      arange("bert.embeddings.position_ids", 12),
      test::tensor_of<std::int64_t>("bert.embeddings.token_type_ids", {1, 12},
                                    std::vector<std::int64_t>(12, 0)),
      test::tensor_of<std::int32_t>("bert.embeddings.odd_buffer", {1, 12},
                                    {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8})};
  const Resized r = resize_file(dir, in, {}, 40);
  const Tensor& ids = r.back.at("bert.embeddings.position_ids");
  EXPECT_EQ(ids.dtype(), DType::I64);
  EXPECT_EQ(ids.shape(), (std::vector<std::uint64_t>{1, 40}));
  EXPECT_EQ(test::values_of<std::int64_t>(ids), test::values_of<std::int64_t>(arange("", 40)));
  const Tensor& types = r.back.at("bert.embeddings.token_type_ids");
  EXPECT_EQ(test::values_of<std::int64_t>(types), std::vector<std::int64_t>(40, 0));
  // The table keeps its dtype; an integer buffer that neither counts nor is constant is kept
  // and reported.
  EXPECT_EQ(r.back.at("bert.embeddings.position_embeddings.weight").dtype(), DType::F16);
  EXPECT_EQ(r.back.at("bert.embeddings.odd_buffer").shape(), (std::vector<std::uint64_t>{1, 12}));
  EXPECT_EQ(r.out.extended.size(), 2u);
  EXPECT_EQ(r.out.kept_with_old_length, (std::vector<std::string>{"bert.embeddings.odd_buffer"}));
}

TEST(ReplaceTable, RobertaReservedRowsStayAndIdsCoverEveryRow) {
  test::TempDir dir;
  Tensor table = float_tensor("roberta.embeddings.position_embeddings.weight", {10, 4}, 5);
  const std::vector<Tensor> in = {table, arange("roberta.embeddings.position_ids", 10)};
  const Resized r = resize_file(dir, in, {}, 16, 2);
  EXPECT_EQ(r.table.reserved_rows, 2u);
  EXPECT_TRUE(r.table.reserved_rows_recorded);
  EXPECT_EQ(r.table.values.rows(), 18u);
  EXPECT_EQ(r.back.at("roberta.embeddings.position_ids").shape(),
            (std::vector<std::uint64_t>{1, 18}));
  EXPECT_EQ(r.back.metadata.at("posemb.reserved_rows"), "2");
}

TEST(ReplaceTable, ClipExtendsOnlyTheIdsOfTheResizedTower) {
  test::TempDir dir;
  const std::vector<Tensor> in = {
      float_tensor("text_model.embeddings.position_embedding.weight", {7, 4}, 1),
      arange("text_model.embeddings.position_ids", 7),
      float_tensor("vision_model.embeddings.position_embedding.weight", {7, 4}, 2),
      arange("vision_model.embeddings.position_ids", 7)};
  const std::string path = dir.file("clip.safetensors");
  write_safetensors(path, in);
  const TensorFile f = read_safetensors(path);
  const PositionTable t =
      load_position_table(f, path, "text_model.embeddings.position_embedding.weight");
  const ResizedFile out = replace_position_table(f, resize_table(t, 12, ResizeMethod::interpolate));
  EXPECT_EQ(named(out.tensors, "text_model.embeddings.position_ids").shape(),
            (std::vector<std::uint64_t>{1, 12}));
  EXPECT_EQ(named(out.tensors, "vision_model.embeddings.position_ids").shape(),
            (std::vector<std::uint64_t>{1, 7}));
  EXPECT_EQ(named(out.tensors, "vision_model.embeddings.position_embedding.weight").shape(),
            (std::vector<std::uint64_t>{7, 4}));
  EXPECT_EQ(out.kept_with_old_length,
            (std::vector<std::string>{"vision_model.embeddings.position_ids"}));
}

TEST(ReplaceTable, VitTableKeepsItsLeadingOneAndTheLabsOptimizerStateIsReported) {
  test::TempDir dir;
  const std::vector<Tensor> vit = {
      float_tensor("vit.embeddings.cls_token", {1, 1, 4}, 1),
      float_tensor("vit.embeddings.position_embeddings", {1, 5, 4}, 2)};
  const Resized r = resize_file(dir, vit, {}, 9, 1);
  EXPECT_EQ(r.back.at("vit.embeddings.position_embeddings").shape(),
            (std::vector<std::uint64_t>{1, 10, 4}));
  EXPECT_EQ(r.back.at("vit.embeddings.cls_token").shape(), (std::vector<std::uint64_t>{1, 1, 4}));
  EXPECT_TRUE(r.out.kept_with_old_length.empty());
  // A lab checkpoint: the table's AdamW moments keep the old shape and are reported.
  const std::vector<Tensor> lab = {float_tensor("wte.weight", {12, 4}, 1),
                                   float_tensor("wpe.weight", {6, 4}, 2),
                                   float_tensor("optimizer.adamw.m.wpe.weight", {6, 4}, 3),
                                   float_tensor("optimizer.adamw.v.wpe.weight", {6, 4}, 4),
                                   float_tensor("optimizer.adamw.m.wte.weight", {12, 4}, 5)};
  const Resized l = resize_file(dir, lab, {{"posemb.tensor", "wpe.weight"}}, 10);
  EXPECT_EQ(l.out.kept_with_old_length, (std::vector<std::string>{"optimizer.adamw.m.wpe.weight",
                                                                  "optimizer.adamw.v.wpe.weight"}));
}

TEST(ReplaceTable, RefusesATableTheFileDoesNotHave) {
  test::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {float_tensor("wpe.weight", {4, 3}, 1)});
  const TensorFile f = read_safetensors(path);
  PositionTable t = load_position_table(f, path);
  t.source_tensor = "elsewhere";
  EXPECT_THROW((void)replace_position_table(f, t), std::invalid_argument);
  t = load_position_table(f, path);
  t.values = Matrix<float>(4, 5);  // another width
  EXPECT_THROW((void)replace_position_table(f, t), std::invalid_argument);
}

}  // namespace
}  // namespace posemb
