// The provenance of a position table as data (posemb/table_provenance.hpp): every resize
// recorded as a TableResize, written as posemb.resizes (JSON) beside the posemb.provenance text
// and read back; files written before posemb.resizes existed read from their text; malformed
// records refused with the field named.
#include <gtest/gtest.h>

#include <string>

#include "file_test_util.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/table_provenance.hpp"
#include "temp_dir.hpp"

namespace posemb {
namespace {

PositionTable small_table(std::size_t reserved, std::size_t positions, std::size_t dim) {
  PositionTable t;
  t.values = Matrix<float>(reserved + positions, dim);
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    t.values.flat()[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  }
  t.reserved_rows = reserved;
  t.source_file = "in.safetensors";
  t.source_tensor = "wpe.weight";
  return t;
}

TEST(TableProvenance, EveryResizeIsRecordedAsDataAndDescribedAsBefore) {
  PositionTable t = small_table(2, 6, 4);
  ResizeOptions o;
  o.seed = 42;
  o.stddev = 0.5;
  const PositionTable a = resize_table(t, 9, ResizeMethod::random, o);
  ASSERT_EQ(a.resizes.size(), 1u);
  const TableResize& r = a.resizes[0];
  EXPECT_EQ(r.operation, "resize");
  EXPECT_EQ(r.method, "random");
  EXPECT_EQ(r.from_positions, 6u);
  EXPECT_EQ(r.to_positions, 9u);
  EXPECT_EQ(r.reserved_rows, 2u);
  EXPECT_EQ(r.source_file, "in.safetensors");
  EXPECT_EQ(r.source_tensor, "wpe.weight");
  EXPECT_EQ(r.initializer, "normal");
  EXPECT_EQ(r.stddev, 0.5);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_FALSE(r.scale);
  // The text for people, in the form posemb.provenance has always had.
  EXPECT_EQ(a.provenance,
            "resize: random 6 -> 9 positions, new rows normal(std=0.5, seed=42), 2 reserved rows "
            "kept, from 'in.safetensors' tensor 'wpe.weight'");
  // A second resize of the result (made in memory: no source file) appends to both.
  const PositionTable b = resize_table(a, 12, ResizeMethod::sinusoidal);
  ASSERT_EQ(b.resizes.size(), 2u);
  EXPECT_EQ(b.resizes[0], r);
  EXPECT_EQ(b.resizes[1].method, "sinusoidal");
  ASSERT_TRUE(b.resizes[1].scale);
  EXPECT_GT(*b.resizes[1].scale, 0.0);
  EXPECT_EQ(b.resizes[1].source_file, "");
  EXPECT_EQ(b.provenance, a.provenance + "; " + describe_resize(b.resizes[1]));
  EXPECT_NE(b.provenance.find("; resize: sinusoidal 9 -> 12 positions, new rows the sinusoidal "
                              "encoding (interleaved, base 10000) x "),
            std::string::npos)
      << b.provenance;
}

TEST(TableProvenance, FilesKeepTheResizesAndReadThemBack) {
  test::TempDir dir;
  PositionTable t = small_table(1, 5, 3);
  t.provenance = "posemb train (learned, step 2)";
  ResizeOptions o;
  o.initializer = "glorot-uniform";
  o.seed = 18446744073709551615ull;  // the largest seed survives JSON
  PositionTable r =
      resize_table(resize_table(t, 8, ResizeMethod::copy), 11, ResizeMethod::random, o);
  r.source_file = "long.safetensors";
  r = resize_table(r, 4, ResizeMethod::truncate);
  const std::string path = dir.file("t.safetensors");
  save_position_table(path, r);
  const PositionTable back = load_position_table(path);
  EXPECT_EQ(back.resizes, r.resizes);
  EXPECT_EQ(back.provenance, r.provenance);
  EXPECT_EQ(back.resizes.size(), 3u);
  EXPECT_EQ(back.resizes[2].source_file, "long.safetensors");
  // The whole-file form records them too, and replaces a stale record.
  TensorFile f = read_safetensors(path);
  PositionTable fresh = back;
  fresh.resizes.clear();
  fresh.provenance.clear();
  const ResizedFile rf = replace_position_table(f, fresh);
  EXPECT_EQ(rf.metadata.count(std::string(kResizesKey)), 0u) << "no stale record";
  const ResizedFile rf2 = replace_position_table(f, resize_table(back, 6, ResizeMethod::copy));
  const auto recorded = recorded_resizes(rf2.metadata, "x");
  ASSERT_EQ(recorded.size(), 4u);
  EXPECT_EQ(recorded[3].method, "copy");
  EXPECT_EQ(recorded[3].from_positions, 4u);
}

TEST(TableProvenance, NamesThatAreNotUtf8AreKeptSafe) {
  PositionTable t = small_table(0, 3, 2);
  t.source_file = std::string("bad\xff\xfe name.safetensors");
  const PositionTable r = resize_table(t, 5, ResizeMethod::copy);
  const std::string json = resizes_json(r.resizes);
  const auto back = recorded_resizes({{std::string(kResizesKey), json}}, "x");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].to_positions, 5u);
  EXPECT_NE(back[0].source_file.find("name.safetensors"), std::string::npos);
}

TEST(TableProvenance, AFileWrittenBeforePosembResizesIsReadFromItsText) {
  const std::string path =
      std::string(POSEMB_TEST_DATA_DIR) + "/provenance/resized-before-posemb-resizes.safetensors";
  const TensorFile f = read_safetensors(path);
  ASSERT_EQ(f.metadata.count(std::string(kResizesKey)), 0u) << "an old-format file";
  const PositionTable t = load_position_table(path);
  EXPECT_EQ(t.values.rows(), 9u);
  EXPECT_EQ(t.reserved_rows, 1u);
  ASSERT_EQ(t.resizes.size(), 3u);
  const TableResize& a = t.resizes[0];
  EXPECT_EQ(a.method, "random");
  EXPECT_EQ(a.from_positions, 5u);
  EXPECT_EQ(a.to_positions, 9u);
  EXPECT_EQ(a.reserved_rows, 1u);
  EXPECT_EQ(a.initializer, "normal");
  EXPECT_EQ(a.stddev, 0.5);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(a.source_file, "tiny.safetensors");
  EXPECT_EQ(a.source_tensor, "wpe.weight");
  const TableResize& b = t.resizes[1];
  EXPECT_EQ(b.method, "sinusoidal");
  EXPECT_EQ(b.from_positions, 9u);
  EXPECT_EQ(b.to_positions, 11u);
  ASSERT_TRUE(b.scale);
  EXPECT_NEAR(*b.scale, 0.96144, 5e-6);  // as the text gave it: 6 significant digits
  EXPECT_EQ(b.source_file, "a.safetensors");
  const TableResize& c = t.resizes[2];
  EXPECT_EQ(c.method, "truncate");
  EXPECT_EQ(c.from_positions, 11u);
  EXPECT_EQ(c.to_positions, 8u);
  EXPECT_EQ(c.source_file, "b.safetensors");
  // Described again, each record gives back its part of the text.
  std::string text;
  for (const auto& r : t.resizes) text += (text.empty() ? "" : "; ") + describe_resize(r);
  EXPECT_EQ(text, t.provenance);
  // Resized again: the old records and the new one, all as data from now on.
  const PositionTable longer = resize_table(t, 10, ResizeMethod::copy);
  EXPECT_EQ(longer.resizes.size(), 4u);
}

TEST(TableProvenance, TextThatIsNotAResizeRecordsNothing) {
  EXPECT_TRUE(recorded_resizes({}, "x").empty());
  EXPECT_TRUE(
      recorded_resizes({{"posemb.provenance", "posemb train (learned, step 2)"}}, "x").empty());
  EXPECT_TRUE(recorded_resizes({{"posemb.provenance", "made by resize: hand"}}, "x").empty());
  EXPECT_TRUE(recorded_resizes({{"posemb.provenance", "resize: copy lots -> more"}}, "x").empty());
  // The lab's lineage quotes a table's provenance: the resize inside is found.
  const auto r = recorded_resizes(
      {{"posemb.provenance",
        "init from a (learned), table from t (resize: copy 8 -> 14 positions); posemb train"}},
      "x");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].to_positions, 14u);
}

TEST(TableProvenance, MalformedRecordsAreRefusedNamingTheField) {
  auto error_of = [](const std::string& json) {
    try {
      recorded_resizes({{std::string(kResizesKey), json}}, "f.safetensors");
    } catch (const FileFormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("not json").find("is not a JSON array of resizes"), std::string::npos);
  EXPECT_NE(error_of("{}").find("is not a JSON array"), std::string::npos);
  EXPECT_NE(error_of("[[1]]").find("posemb.resizes[0] is not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("[{\"method\": \"copy\", \"from_positions\": 1, \"to_positions\": 2}]")
                .find("posemb.resizes[0].operation is missing"),
            std::string::npos);
  const std::string ok = R"({"operation": "resize", "method": "copy", "from_positions": 1, )";
  EXPECT_NE(error_of("[" + ok + "\"to_positions\": -2}]").find(".to_positions is not a whole"),
            std::string::npos);
  EXPECT_NE(error_of("[" + ok + "\"to_positions\": 2.5}]").find(".to_positions is not a whole"),
            std::string::npos);
  EXPECT_NE(error_of("[" + ok + "\"to_positions\": 2, \"stddev\": \"big\"}]")
                .find(".stddev is not a number"),
            std::string::npos);
  EXPECT_NE(error_of("[" + ok + "\"to_positions\": 2, \"method\": 3}]").find("f.safetensors"),
            std::string::npos);
  // Deep nesting is refused before parsing; so is a value too long to be a record.
  EXPECT_NE(error_of(std::string(100000, '[') + std::string(100000, ']')).find("not a JSON array"),
            std::string::npos);
  EXPECT_NE(error_of("[" + std::string(2u << 20, ' ') + "]").find("more than"), std::string::npos);
  // Unknown fields (a later posemb's) are ignored.
  const auto r = recorded_resizes(
      {{std::string(kResizesKey), "[" + ok + "\"to_positions\": 2, \"grid\": [3, 4]}]"}}, "x");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].to_positions, 2u);
}

TEST(TableProvenance, ALoadedTableWithAMalformedRecordIsAFileFormatError) {
  test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_safetensors(path, {Tensor::from_matrix("wpe.weight", Matrix<float>(4, 2))},
                    {{"posemb.tensor", "wpe.weight"}, {std::string(kResizesKey), "[{}]"}});
  EXPECT_THROW(load_position_table(path), FileFormatError);
}

}  // namespace
}  // namespace posemb
