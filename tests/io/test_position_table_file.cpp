// Finding the position table in a checkpoint, posemb's metadata, save/load round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "file_test_util.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::TempDir;

Tensor table_tensor(const std::string& name, std::size_t rows, std::size_t cols,
                    std::uint64_t seed) {
  Matrix<float> m(rows, cols);
  const auto v = test::random_values<float>(rows * cols, seed);
  std::copy(v.begin(), v.end(), m.flat().begin());
  return Tensor::from_matrix(name, m.cview());
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileFormatError& e) {
    return e.what();
  }
  return "(no FileFormatError)";
}

TEST(FindTable, EachCommonNameIsFoundAndReported) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"wpe.weight", "'wpe.weight'"},
      {"transformer.wpe.weight", "'transformer.wpe.weight'"},
      {"bert.embeddings.position_embeddings.weight", "'*embeddings.position_embeddings.weight'"},
      {"model.decoder.embed_positions.weight", "'*embed_positions.weight'"},
      {"positional_embedding", "'*positional_embedding'"},
      {"vision.positional_embedding", "'*positional_embedding'"}};
  for (const auto& [name, pattern] : cases) {
    const std::string path = dir.file("m.safetensors");
    write_safetensors(path, {table_tensor("wte.weight", 10, 4, 1), table_tensor(name, 8, 4, 2),
                             table_tensor("h.0.mlp.weight", 4, 4, 3)});
    const PositionTable t = load_position_table(path);
    EXPECT_EQ(t.source_tensor, name);
    EXPECT_NE(t.how_found.find(pattern), std::string::npos) << t.how_found;
    EXPECT_EQ(t.values.rows(), 8u);
    EXPECT_TRUE(test::same_bits(std::vector<float>(t.values.flat().begin(), t.values.flat().end()),
                                test::values_of<float>(table_tensor(name, 8, 4, 2))));
  }
}

TEST(FindTable, SeveralMatchesAreRefusedWithTheCandidates) {
  TempDir dir;
  const std::string path = dir.file("bart.safetensors");
  write_safetensors(path, {table_tensor("model.encoder.embed_positions.weight", 6, 4, 1),
                           table_tensor("model.decoder.embed_positions.weight", 6, 4, 2)});
  const std::string msg = message_of([&] { (void)load_position_table(path); });
  EXPECT_NE(msg.find("model.encoder.embed_positions.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.decoder.embed_positions.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("name the one to use"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("--"), std::string::npos) << "library messages name no CLI flags: " << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  // --tensor resolves it.
  const PositionTable t = load_position_table(path, "model.decoder.embed_positions.weight");
  EXPECT_EQ(t.source_tensor, "model.decoder.embed_positions.weight");
  EXPECT_EQ(t.how_found, "named by the caller");
}

TEST(FindTable, NoMatchListsTheTablesAndNamesWorkWithTensor) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {table_tensor("pos", 6, 4, 1), table_tensor("tok", 9, 4, 2)});
  const std::string msg = message_of([&] { (void)load_position_table(path); });
  EXPECT_NE(msg.find("no position table found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'pos', 'tok'"), std::string::npos) << msg;
  EXPECT_EQ(load_position_table(path, "pos").values.rows(), 6u);
  const std::string missing = message_of([&] { (void)load_position_table(path, "nope"); });
  EXPECT_NE(missing.find("no tensor named 'nope'"), std::string::npos) << missing;
}

TEST(FindTable, NonTableTensorsAreRefused) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {test::tensor_of<float>("wpe.weight", {5}, {1, 2, 3, 4, 5})});
  EXPECT_NE(message_of([&] { (void)load_position_table(path); }).find("not a 2-D float table"),
            std::string::npos);
  // The I64 position_ids buffer of a BERT checkpoint is skipped over by the name lookup.
  const PositionTable bert =
      load_position_table(std::string(POSEMB_TEST_DATA_DIR) + "/valid/bert_like_f16.safetensors");
  EXPECT_EQ(bert.source_tensor, "bert.embeddings.position_embeddings.weight");
  EXPECT_EQ(bert.dtype, DType::F16);
  EXPECT_EQ(bert.values,
            read_safetensors(std::string(POSEMB_TEST_DATA_DIR) + "/valid/bert_like_f16.safetensors")
                .at("bert.embeddings.position_embeddings.weight")
                .to_matrix<float>());
  EXPECT_THROW((void)load_position_table(
                   std::string(POSEMB_TEST_DATA_DIR) + "/valid/bert_like_f16.safetensors",
                   "bert.embeddings.position_ids"),
               FileFormatError);
}

TEST(PositionTableFile, SaveLoadKeepsMetadataAndReservedRows) {
  TempDir dir;
  PositionTable t;
  t.values = table_tensor("x", 514, 8, 5).to_matrix<float>();
  t.reserved_rows = 2;
  t.training_length = 512;
  t.initializer = "normal(std=0.02, seed=3)";
  t.provenance = "made by a test";
  t.source_tensor = "roberta.embeddings.position_embeddings.weight";
  const std::string path = dir.file("r.safetensors");
  save_position_table(path, t);
  const PositionTable r = load_position_table(path);
  EXPECT_EQ(r.values, t.values);
  EXPECT_EQ(r.reserved_rows, 2u);
  EXPECT_EQ(r.positions(), 512u);
  EXPECT_EQ(r.training_length, std::optional<std::size_t>(512));
  EXPECT_EQ(r.initializer, t.initializer);
  EXPECT_EQ(r.provenance, t.provenance);
  EXPECT_EQ(r.source_tensor, t.source_tensor);
  EXPECT_EQ(r.usable().data(), r.values.data() + 2 * 8);
  const auto meta = read_safetensors(path).metadata;
  EXPECT_EQ(meta.at("posemb.reserved_rows"), "2");
  EXPECT_EQ(meta.at("posemb.training_length"), "512");
  // .npy holds every row, the reserved ones included, and cannot record how many are reserved:
  // read back, they are all positions until the reader is told.
  save_position_table(dir.file("r.npy"), t);
  const PositionTable n = load_position_table(dir.file("r.npy"));
  EXPECT_EQ(n.values, t.values);
  EXPECT_EQ(n.reserved_rows, 0u);
  EXPECT_FALSE(n.reserved_rows_recorded);
  EXPECT_TRUE(r.reserved_rows_recorded);
  EXPECT_THROW((void)load_position_table(dir.file("r.npy"), "x"), FileFormatError);
}

TEST(PositionTableFile, MetadataDescribesOnlyTheTensorItNames) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  write_safetensors(path, {table_tensor("wpe.weight", 6, 4, 1), table_tensor("other", 6, 4, 2)},
                    {{"posemb.tensor", "wpe.weight"},
                     {"posemb.reserved_rows", "2"},
                     {"posemb.training_length", "4"}});
  const PositionTable own = load_position_table(path);
  EXPECT_EQ(own.reserved_rows, 2u);
  EXPECT_EQ(own.training_length, std::optional<std::size_t>(4));
  const PositionTable other = load_position_table(path, "other");
  EXPECT_EQ(other.reserved_rows, 0u);
  EXPECT_FALSE(other.reserved_rows_recorded);
  EXPECT_FALSE(other.training_length.has_value());
}

TEST(FindTable, ClipAndVitNamesAreFound) {
  TempDir dir;
  const std::string path = dir.file("clip.safetensors");
  // A CLIP text model alone: found. Text and vision together: both listed, name the one.
  write_safetensors(
      path,
      {table_tensor("text_model.embeddings.position_embedding.weight", 77, 8, 1),
       test::tensor_of<std::int64_t>("text_model.embeddings.position_ids", {1, 3}, {0, 1, 2})});
  EXPECT_EQ(load_position_table(path).source_tensor,
            "text_model.embeddings.position_embedding.weight");
  write_safetensors(path,
                    {table_tensor("text_model.embeddings.position_embedding.weight", 77, 8, 1),
                     table_tensor("vision_model.embeddings.position_embedding.weight", 50, 8, 2)});
  const std::string msg = message_of([&] { (void)load_position_table(path); });
  EXPECT_NE(msg.find("vision_model.embeddings.position_embedding.weight"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("name the one to use"), std::string::npos) << msg;
  EXPECT_EQ(
      load_position_table(path, "vision_model.embeddings.position_embedding.weight").values.rows(),
      50u);
  // ViT: a (1, N, C) parameter, read as (N, C) over the same values.
  const Tensor vit = test::random_tensor<float>("vit.embeddings.position_embeddings", {1, 5, 3}, 7);
  write_safetensors(path,
                    {test::random_tensor<float>("vit.embeddings.cls_token", {1, 1, 3}, 8), vit});
  const PositionTable v = load_position_table(path);
  EXPECT_EQ(v.source_tensor, "vit.embeddings.position_embeddings");
  EXPECT_EQ(v.stored_shape, (std::vector<std::uint64_t>{1, 5, 3}));
  ASSERT_EQ(v.values.rows(), 5u);
  ASSERT_EQ(v.values.cols(), 3u);
  EXPECT_TRUE(test::same_bits(std::vector<float>(v.values.flat().begin(), v.values.flat().end()),
                              test::values_of<float>(vit)));
  // timm's pos_embed; a (2, N, C) tensor is not a table.
  write_safetensors(path, {test::random_tensor<float>("pos_embed", {1, 4, 3}, 9)});
  EXPECT_EQ(load_position_table(path).values.rows(), 4u);
  write_safetensors(path, {test::random_tensor<float>("pos_embed", {2, 4, 3}, 9)});
  EXPECT_NE(message_of([&] { (void)load_position_table(path); }).find("not a 2-D float table"),
            std::string::npos);
}

TEST(PositionTableFile, StoredShapeIsWrittenBack) {
  TempDir dir;
  const std::string path = dir.file("vit.safetensors");
  write_safetensors(path, {test::random_tensor<float>("pos_embed", {1, 6, 4}, 3)});
  PositionTable t = load_position_table(path);
  save_position_table(dir.file("back.safetensors"), t);
  save_position_table(dir.file("back.npy"), t);
  for (const char* f : {"back.safetensors", "back.npy"}) {
    const TensorFile back = read_tensor_file(dir.file(f));
    EXPECT_EQ(back.tensors.front().shape(), (std::vector<std::uint64_t>{1, 6, 4})) << f;
    EXPECT_EQ(load_position_table(dir.file(f)).values, t.values) << f;
  }
  // A table made in memory (no stored shape) is written as (rows, dim).
  t.stored_shape.clear();
  save_position_table(dir.file("flat.npy"), t);
  EXPECT_EQ(read_npy(dir.file("flat.npy")).shape(), (std::vector<std::uint64_t>{6, 4}));
  // A stored shape that cannot hold the table is refused.
  t.stored_shape = {1, 6, 5};
  EXPECT_THROW((void)position_table_tensor(t, DType::F32), std::invalid_argument);
}

TEST(PositionTableFile, BadPosembMetadataIsRefused) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::vector<std::pair<Metadata, std::string>> cases = {
      {{{"posemb.reserved_rows", "7"}}, "but the table has 6 rows"},
      {{{"posemb.reserved_rows", "-1"}}, "not a row count"},
      {{{"posemb.training_length", "12x"}}, "not a row count"},
      {{{"posemb.tensor", "absent"}}, "not in the file"}};
  for (const auto& [meta, phrase] : cases) {
    write_safetensors(path, {table_tensor("wpe.weight", 6, 4, 1)}, meta);
    const std::string msg = message_of([&] { (void)load_position_table(path); });
    EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
  }
}

TEST(PositionTableFile, F32AndF64RoundTripThroughAllFormatsBitExact) {
  TempDir dir;
  // F32: safetensors -> npy -> posemb -> safetensors, bit for bit.
  const Tensor f32 = table_tensor("wpe.weight", 33, 7, 9);
  write_safetensors(dir.file("a.safetensors"), {f32});
  PositionTable t = load_position_table(dir.file("a.safetensors"));
  save_position_table(dir.file("a.npy"), t);
  EXPECT_TRUE(test::same_bits(test::values_of<float>(read_npy(dir.file("a.npy"))),
                              test::values_of<float>(f32)));
  const PositionTable back = load_position_table(dir.file("a.npy"));
  save_position_table(dir.file("b.safetensors"), back);
  EXPECT_TRUE(test::same_bits(
      test::values_of<float>(read_safetensors(dir.file("b.safetensors")).tensors[0]),
      test::values_of<float>(f32)));
  // F64 through the tensor API: safetensors -> npy -> safetensors.
  Matrix<double> m(5, 3);
  const auto v = test::random_values<double>(15, 4);
  std::copy(v.begin(), v.end(), m.flat().begin());
  write_safetensors(dir.file("d.safetensors"), {Tensor::from_matrix("wpe.weight", m)});
  Tensor d = read_safetensors(dir.file("d.safetensors")).at("wpe.weight");
  write_npy(dir.file("d.npy"), d);
  Tensor dn = read_npy(dir.file("d.npy"));
  dn.set_name("wpe.weight");
  write_safetensors(dir.file("e.safetensors"), {dn});
  EXPECT_TRUE(test::same_bits(
      test::values_of<double>(read_safetensors(dir.file("e.safetensors")).at("wpe.weight")), v));
  EXPECT_EQ(read_safetensors(dir.file("e.safetensors")).at("wpe.weight").to_matrix<double>(), m);
}

// Every table that enters a computation is finite: NaN and infinity are refused at load, naming
// the file, the tensor, the row and the column.
TEST(PositionTableFile, NonFiniteTablesAreRefusedAtLoad) {
  TempDir dir;
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    Matrix<float> m(6, 4);
    m(3, 2) = bad;
    const std::string path = dir.file("bad.safetensors");
    write_safetensors(path, {Tensor::from_matrix("wpe.weight", m)});
    const std::string msg = message_of([&] { (void)load_position_table(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("'wpe.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("row 3, column 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::isnan(bad) ? "NaN" : "infinity"), std::string::npos) << msg;
    write_npy(dir.file("bad.npy"), Tensor::from_matrix("", m));
    EXPECT_NE(
        message_of([&] { (void)load_position_table(dir.file("bad.npy")); }).find("row 3, column 2"),
        std::string::npos);
  }
  // Stored as F16, a value beyond 65504 is infinity already in the file (written by another
  // tool: posemb's writers refuse it; astype rounds as IEEE does).
  Matrix<float> big(2, 2);
  big(1, 1) = 1e6f;
  write_safetensors(dir.file("f16.safetensors"),
                    {Tensor::from_matrix("wpe.weight", big).astype(DType::F16)});
  EXPECT_NE(message_of([&] {
              (void)load_position_table(dir.file("f16.safetensors"));
            }).find("+infinity at row 1, column 1"),
            std::string::npos);
}

// A table with no columns is refused at once, however many rows it claims (no loop over 2^40
// empty rows).
TEST(PositionTableFile, TablesWithoutColumnsAreRefused) {
  TempDir dir;
  const Tensor tall = Tensor::from_bytes("wpe.weight", DType::F32, {1ull << 40, 0}, {});
  write_safetensors(dir.file("tall.safetensors"), {tall});
  tall.name();
  write_npy(dir.file("tall.npy"), Tensor::from_bytes("", DType::F32, {1ull << 40, 0}, {}));
  for (const char* f : {"tall.safetensors", "tall.npy"}) {
    const std::string msg = message_of([&] { (void)load_position_table(dir.file(f)); });
    EXPECT_NE(msg.find("[1099511627776, 0]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs at least one column"), std::string::npos) << msg;
  }
}

// A table without columns would not load back (load_position_table refuses it), so saving
// refuses it too, with std::invalid_argument, writing nothing (it saved, then failed to load).
TEST(PositionTableFile, SavingATableWithoutColumnsIsRefused) {
  TempDir dir;
  PositionTable t;
  t.values = Matrix<float>(3, 0);
  for (const char* f : {"t.safetensors", "t.npy"}) {
    try {
      save_position_table(dir.file(f), t);
      ADD_FAILURE() << "saved " << f;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("(3, 0)"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("save_position_table"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file(f))) << f;
  }
}

// An out-of-range DType (a number cast to it) read as F32: saving said "dtype F32 is not a
// float dtype". Now refused naming the number.
TEST(PositionTableFile, AnUnlistedDTypeIsRefusedNamingItsValue) {
  TempDir dir;
  PositionTable t;
  t.values = Matrix<float>(3, 2);
  try {
    save_position_table(dir.file("t.safetensors"), t, static_cast<DType>(200));
    ADD_FAILURE() << "saved";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dtype 200"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("F32"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)position_table_tensor(t, static_cast<DType>(200)), std::invalid_argument);
}

// reserved_rows past the rows: positions() wrapped around (2 rows, 5 reserved gave
// 18446744073709551613) and usable() threw a meaningless range. Both now name the numbers.
TEST(PositionTableFile, ReservedRowsPastTheRowsAreNamed) {
  PositionTable t;
  t.values = Matrix<float>(2, 3);
  t.reserved_rows = 5;
  for (const auto& call : std::vector<std::function<void()>>{[&] { (void)t.positions(); },
                                                             [&] { (void)t.usable(); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("reserved_rows 5"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("2 rows"), std::string::npos) << e.what();
    }
  }
  t.reserved_rows = 2;
  EXPECT_EQ(t.positions(), 0u);
  EXPECT_EQ(t.usable().rows(), 0u);
}

// usable() is a view into the table: not of a temporary one (`load_position_table(p).usable()`
// dangled at the end of the statement).
template <class T>
concept UsableOf = requires(T&& t) {
  std::forward<T>(t).usable();
};
static_assert(UsableOf<PositionTable&> && UsableOf<const PositionTable&>);
static_assert(!UsableOf<PositionTable> && !UsableOf<const PositionTable>);

}  // namespace
}  // namespace posemb
