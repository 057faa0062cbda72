// Hugging Face checkpoint folders: a sharded GPT-2-shaped folder and a ViT folder read, resized
// and written whole (config keys, index total_size, other files byte for byte, the input
// untouched); the config's length keys per family; hostile folders refused before anything is
// written; the output folder's rules (non-empty refused unless forced, never inside the input).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "file_test_util.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/errors.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

namespace fs = std::filesystem;
using test::read_all;
using test::TempDir;
using test::write_all;

Tensor f32(const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t seed) {
  std::uint64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * float(i + seed)) * 0.1f;
  return Tensor::from_bytes(name, DType::F32, std::move(shape),
                            std::as_bytes(std::span<const float>(v)));
}

// Every file under dir and its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = read_all(e.path().string());
  }
  return m;
}

constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
constexpr const char* kShard2 = "model-00002-of-00002.safetensors";

// GPT-2-shaped, 2 shards, the table (16, 4) in the second; a tokenizer file beside them.
void make_gpt2_folder(const fs::path& d) {
  fs::create_directories(d);
  write_safetensors((d / kShard1).string(), {f32("transformer.wte.weight", {10, 4}, 1),
                                             f32("transformer.h.0.mlp.c_fc.weight", {4, 8}, 2)});
  write_safetensors((d / kShard2).string(), {f32("transformer.h.0.attn.bias", {1, 1, 16, 16}, 3),
                                             f32("transformer.wpe.weight", {16, 4}, 4)});
  const std::uint64_t total = (40 + 32 + 256 + 64) * 4;
  write_all((d / "model.safetensors.index.json").string(), R"({"metadata": {"total_size": )" +
                                                               std::to_string(total) +
                                                               R"(}, "weight_map": {
  "transformer.wte.weight": ")" + kShard1 + R"(",
  "transformer.h.0.mlp.c_fc.weight": ")" + kShard1 + R"(",
  "transformer.h.0.attn.bias": ")" + kShard2 + R"(",
  "transformer.wpe.weight": ")" + kShard2 + R"("}})");
  write_all((d / "config.json").string(),
            R"({"model_type": "gpt2", "n_ctx": 16, "n_embd": 4, "n_positions": 16,
 "layer_norm_epsilon": 1e-05, "architectures": ["GPT2LMHeadModel"]})");
  write_all((d / "tokenizer.json").string(), "{\"version\": \"1.0\"}\n\x01\xff");
}

TEST(CheckpointFolder, ShardedGpt2ResizedByCopyWritesAWholeFolder) {
  TempDir tmp;
  const fs::path in = tmp.path() / "gpt2", out = tmp.path() / "gpt2-long";
  make_gpt2_folder(in);
  const auto before = snapshot(in);
  const CheckpointFolder f = read_checkpoint_folder(in.string());
  EXPECT_EQ(f.table_tensor, "transformer.wpe.weight");
  EXPECT_EQ(f.table_shard, kShard2);
  EXPECT_EQ(f.other_files, std::vector<std::string>{"tokenizer.json"});
  const PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const PositionTable r = resize_table(t, 32, ResizeMethod::copy);
  const ResizedFile shard = replace_position_table(f.table_file, r);
  const FolderWriteReport rep = write_checkpoint_folder(f, shard, 32, std::nullopt, out.string());

  EXPECT_EQ(snapshot(in), before);  // the input untouched
  const auto after = snapshot(out);
  EXPECT_EQ(after.size(), before.size());
  EXPECT_EQ(after.at(kShard1), before.at(kShard1));  // byte for byte
  EXPECT_EQ(after.at("tokenizer.json"), before.at("tokenizer.json"));
  const auto cfg = nlohmann::json::parse(after.at("config.json"));
  EXPECT_EQ(cfg["n_positions"], 32);
  EXPECT_EQ(cfg["n_ctx"], 32);
  EXPECT_EQ(cfg["n_embd"], 4);
  EXPECT_EQ(cfg["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(cfg["layer_norm_epsilon"].get<double>(), 1e-05);
  const auto idx = nlohmann::json::parse(after.at("model.safetensors.index.json"));
  EXPECT_EQ(idx["metadata"]["total_size"], (40 + 32 + 256 + 128) * 4);
  EXPECT_EQ(idx["weight_map"],
            nlohmann::json::parse(before.at("model.safetensors.index.json"))["weight_map"]);
  ASSERT_TRUE(rep.new_total_size.has_value());
  EXPECT_EQ(*rep.new_total_size, std::uint64_t{(40 + 32 + 256 + 128) * 4});
  // Only total_size's text changes in the index: spacing and order as the input has them.
  std::string index = before.at("model.safetensors.index.json");
  const std::string old_total = std::to_string((40 + 32 + 256 + 64) * 4);
  index.replace(index.find(old_total), old_total.size(), std::to_string((40 + 32 + 256 + 128) * 4));
  EXPECT_EQ(after.at("model.safetensors.index.json"), index);
  const TensorFile s2 = read_safetensors((out / kShard2).string());
  const Matrix<float> wpe = s2.at("transformer.wpe.weight").to_matrix<float>();
  ASSERT_EQ(wpe.rows(), 32u);
  for (std::size_t p = 0; p < 32; ++p) {
    for (std::size_t c = 0; c < 4; ++c) ASSERT_EQ(wpe(p, c), t.values(p % 16, c));
  }
  // The other tensor of the table's shard: its bytes kept.
  const TensorFile s2in = read_safetensors((in / kShard2).string());
  const auto a = s2.at("transformer.h.0.attn.bias").bytes();
  const auto b = s2in.at("transformer.h.0.attn.bias").bytes();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  for (const auto& e : fs::directory_iterator(tmp.path())) {  // no temporary left behind
    EXPECT_NE(e.path().filename().string().rfind(".posemb-", 0), 0u) << e.path();
  }
}

TEST(CheckpointFolder, VitFolderResizedToALargerGridSetsImageSize) {
  TempDir tmp;
  const fs::path in = tmp.path() / "vit", out = tmp.path() / "vit-big";
  fs::create_directories(in);
  write_safetensors((in / "model.safetensors").string(),
                    {f32("vit.embeddings.cls_token", {1, 1, 8}, 1),
                     f32("vit.embeddings.position_embeddings", {1, 5, 8}, 2)});
  write_all((in / "config.json").string(),
            R"({"model_type": "vit", "image_size": 32, "patch_size": 16, "hidden_size": 8})");
  const CheckpointFolder f = read_checkpoint_folder(in.string());
  const PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const TableClass k = classify_table(f.table_file, f.table_tensor);
  EXPECT_TRUE(
      check_checkpoint_config(f.config_text, "c", f.table_file, f.table_tensor, 5).agrees());
  const VisionLayout v = vision_layout(t, k);
  const PositionTable r = resize_grid(t, v, {4, 4}, GridMethod::bicubic);
  const ResizedFile shard = replace_position_table(f.table_file, r);
  const FolderWriteReport rep =
      write_checkpoint_folder(f, shard, 17, GridShape{4, 4}, out.string());
  const auto cfg = nlohmann::json::parse(read_all((out / "config.json").string()));
  EXPECT_EQ(cfg["image_size"], 64);
  ASSERT_EQ(rep.config_changes.size(), 1u);
  EXPECT_EQ(rep.config_changes[0].value, "32");
  EXPECT_EQ(rep.config_changes[0].expected, "64");
  const TensorFile o = read_safetensors((out / "model.safetensors").string());
  EXPECT_EQ(o.at("vit.embeddings.position_embeddings").shape(),
            (std::vector<std::uint64_t>{1, 17, 8}));
  // A non-square grid is written as [height, width].
  const fs::path out2 = tmp.path() / "vit-wide";
  const PositionTable w = resize_grid(t, v, {2, 3}, GridMethod::bilinear);
  write_checkpoint_folder(f, replace_position_table(f.table_file, w), 7, GridShape{2, 3},
                          out2.string());
  EXPECT_EQ(nlohmann::json::parse(read_all((out2 / "config.json").string()))["image_size"],
            nlohmann::json::array({32, 48}));
}

// Only the length keys are rewritten: numbers a JSON parser would round (1e-400 to 0, a 30-digit
// integer to a double), spacing and key order stay byte for byte; the old value is reported as
// written.
TEST(CheckpointFolder, ConfigRewriteChangesOnlyTheLengthKeys) {
  TempDir tmp;
  const fs::path in = tmp.path() / "gpt2", out = tmp.path() / "gpt2-long";
  make_gpt2_folder(in);
  const std::string config = R"({"model_type":  "gpt2", "n_ctx": 16,
   "tiny": 1e-400, "big": 123456789012345678901234567890, "n_positions" : 1.6e1,
   "nested": {"n_positions": 16}, "text": "{\"n_positions\": 16}"}
)";
  write_all((in / "config.json").string(), config);
  const CheckpointFolder f = read_checkpoint_folder(in.string());
  const PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const ResizedFile shard =
      replace_position_table(f.table_file, resize_table(t, 32, ResizeMethod::copy));
  const FolderWriteReport rep = write_checkpoint_folder(f, shard, 32, std::nullopt, out.string());
  const std::string expected = R"({"model_type":  "gpt2", "n_ctx": 32,
   "tiny": 1e-400, "big": 123456789012345678901234567890, "n_positions" : 32,
   "nested": {"n_positions": 16}, "text": "{\"n_positions\": 16}"}
)";
  EXPECT_EQ(read_all((out / "config.json").string()), expected);
  ASSERT_EQ(rep.config_changes.size(), 2u);
  EXPECT_EQ(rep.config_changes[0].key, "n_positions");
  EXPECT_EQ(rep.config_changes[0].value, "1.6e1");
  EXPECT_EQ(rep.config_changes[1].key, "n_ctx");
  // GPT-2's n_ctx is set only when present; a BERT config lacking max_position_embeddings is
  // left alone, and an absent key of a vision config is added on a line of its own.
  const fs::path vit = tmp.path() / "vit";
  fs::create_directories(vit);
  write_safetensors((vit / "model.safetensors").string(),
                    {f32("vit.embeddings.position_embeddings", {1, 5, 8}, 2)});
  write_all((vit / "config.json").string(),
            "{\n  \"model_type\": \"vit\",\n  \"patch_size\": 16\n}\n");
  const CheckpointFolder v = read_checkpoint_folder(vit.string());
  const PositionTable vt = load_position_table(v.table_file, v.table_path(), v.table_tensor);
  const PositionTable big =
      resize_grid(vt, vision_layout(vt, classify_table(v.table_file, v.table_tensor)), {4, 4},
                  GridMethod::bicubic);
  write_checkpoint_folder(v, replace_position_table(v.table_file, big), 17, GridShape{4, 4},
                          (tmp.path() / "vit-big").string());
  EXPECT_EQ(read_all((tmp.path() / "vit-big" / "config.json").string()),
            "{\n  \"model_type\": \"vit\",\n  \"patch_size\": 16,\n  \"image_size\": 64\n}\n");
}

TensorFile with_table(const std::string& name, std::vector<std::uint64_t> shape) {
  TensorFile f;
  f.tensors.push_back(f32(name, std::move(shape), 0));
  return f;
}

TEST(CheckpointFolder, ConfigLengthKeysPerFamily) {
  struct Case {
    std::string config, tensor;
    std::vector<std::uint64_t> shape;
    std::string key, expected;
  };
  const Case cases[] = {
      {R"({"model_type":"gpt2","n_positions":1024,"n_ctx":1024})",
       "wpe.weight",
       {1024, 4},
       "n_positions",
       "1024"},
      {R"({"model_type":"roberta","max_position_embeddings":514})",
       "roberta.embeddings.position_embeddings.weight",
       {514, 4},
       "max_position_embeddings",
       "514"},
      {R"({"model_type":"bart","max_position_embeddings":1024})",
       "model.encoder.embed_positions.weight",
       {1026, 4},
       "max_position_embeddings",
       "1024"},
      {R"({"model_type":"whisper","max_source_positions":1500,"max_target_positions":448})",
       "model.decoder.embed_positions.weight",
       {448, 4},
       "max_target_positions",
       "448"},
      {R"({"model_type":"clip","text_config":{"max_position_embeddings":77},"vision_config":{}})",
       "text_model.embeddings.position_embedding.weight",
       {77, 4},
       "text_config.max_position_embeddings",
       "77"},
      {R"({"model_type":"clip","text_config":{},"vision_config":{"image_size":224,"patch_size":32}})",
       "vision_model.embeddings.position_embedding.weight",
       {50, 4},
       "vision_config.image_size",
       "224"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    const TensorFile f = with_table(c.tensor, c.shape);
    const ConfigCheck k =
        check_checkpoint_config(c.config, "config.json", f, c.tensor, c.shape[c.shape.size() - 2]);
    ASSERT_FALSE(k.lengths.empty());
    EXPECT_EQ(k.lengths[0].key, c.key);
    EXPECT_EQ(k.lengths[0].expected, c.expected);
    EXPECT_TRUE(k.agrees()) << k.note;
    // One row more and they disagree.
    EXPECT_FALSE(check_checkpoint_config(c.config, "config.json", f, c.tensor,
                                         c.shape[c.shape.size() - 2] + 1)
                     .agrees());
  }
  EXPECT_THROW(check_checkpoint_config("{\"a\": ", "config.json", with_table("wpe.weight", {4, 4}),
                                       "wpe.weight", 4),
               FileFormatError);
}

// Each hostile folder is refused with FileFormatError; nothing is written anywhere.
TEST(CheckpointFolder, HostileFoldersAreRefused) {
  const auto expect_refused = [](const std::function<void(const fs::path&)>& spoil,
                                 const std::string& needle) {
    SCOPED_TRACE(needle);
    TempDir tmp;
    const fs::path in = tmp.path() / "m";
    make_gpt2_folder(in);
    spoil(in);
    const auto before = snapshot(tmp.path());
    try {
      read_checkpoint_folder(in.string());
      ADD_FAILURE() << "not refused";
    } catch (const FileFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(snapshot(tmp.path()), before);
  };
  const std::string idx = "model.safetensors.index.json";
  auto set_shard_name = [&](const std::string& name) {
    return [=](const fs::path& d) {
      std::string s = read_all((d / idx).string());
      s.replace(s.rfind(kShard2), std::string(kShard2).size(), name);
      write_all((d / idx).string(), s);
    };
  };
  expect_refused([&](const fs::path& d) { fs::remove(d / kShard2); }, "not a file in the folder");
  expect_refused(set_shard_name("../evil.safetensors"), "plain file name");
  expect_refused(set_shard_name("sub/x.safetensors"), "plain file name");
  expect_refused(set_shard_name("/etc/passwd"), "plain file name");
  expect_refused(
      [&](const fs::path& d) {
        fs::rename(d / kShard2, d.parent_path() / "real.safetensors");
        fs::create_symlink(d.parent_path() / "real.safetensors", d / kShard2);
      },
      "symbolic link");
  expect_refused(
      [&](const fs::path& d) {  // shard 1 claims the table too
        write_safetensors((d / kShard1).string(),
                          {f32("transformer.wte.weight", {10, 4}, 1),
                           f32("transformer.h.0.mlp.c_fc.weight", {4, 8}, 2),
                           f32("transformer.wpe.weight", {16, 4}, 4)});
      },
      "in two shards");
  expect_refused([&](const fs::path& d) { write_all((d / "config.json").string(), "{nope"); },
                 "not valid JSON");
  expect_refused([&](const fs::path& d) { write_all((d / "config.json").string(), "[1]"); },
                 "not a JSON object");
  // As `posemb rope` reads a config: a key twice is refused, not one of them silently taken.
  expect_refused(
      [&](const fs::path& d) {
        write_all((d / "config.json").string(),
                  R"({"model_type": "gpt2", "n_positions": 16, "n_positions": 1024})");
      },
      "key 'n_positions' appears twice in one object");
  expect_refused([&](const fs::path& d) { fs::remove(d / "config.json"); }, "no config.json");
  // The index is read as strictly: a tensor given twice names two shards, or one twice.
  expect_refused(
      [&](const fs::path& d) {
        std::string s = read_all((d / idx).string());
        s.insert(s.find("\"transformer.wte.weight\""),
                 std::string("\"transformer.wpe.weight\": \"") + kShard1 + "\",\n  ");
        write_all((d / idx).string(), s);
      },
      "key 'transformer.wpe.weight' appears twice in one object");
  expect_refused([&](const fs::path& d) { write_all((d / idx).string(), "[1]"); },
                 "not a JSON object");
  expect_refused([&](const fs::path& d) { write_all((d / idx).string(), "{\"weight_map\": "); },
                 "not valid JSON");
  expect_refused([&](const fs::path& d) { fs::remove(d / idx); }, "neither model.safetensors");
  expect_refused(set_shard_name(kShard1), "does not hold it");
}

TEST(CheckpointFolder, OutputFolderRules) {
  TempDir tmp;
  const fs::path in = tmp.path() / "gpt2";
  make_gpt2_folder(in);
  const CheckpointFolder f = read_checkpoint_folder(in.string());
  const PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const ResizedFile shard =
      replace_position_table(f.table_file, resize_table(t, 32, ResizeMethod::copy));
  const fs::path out = tmp.path() / "out";
  fs::create_directories(out);
  write_all((out / "keep.txt").string(), "mine");
  EXPECT_THROW(write_checkpoint_folder(f, shard, 32, std::nullopt, out.string()),
               std::invalid_argument);
  EXPECT_EQ(read_all((out / "keep.txt").string()), "mine");
  write_checkpoint_folder(f, shard, 32, std::nullopt, out.string() + "/", true);  // --force
  EXPECT_FALSE(fs::exists(out / "keep.txt"));
  EXPECT_TRUE(fs::exists(out / kShard2));
  const auto before = snapshot(in);
  EXPECT_THROW(write_checkpoint_folder(f, shard, 32, std::nullopt, in.string(), true),
               std::invalid_argument);
  EXPECT_THROW(write_checkpoint_folder(f, shard, 32, std::nullopt, (in / "sub").string(), true),
               std::invalid_argument);
  EXPECT_THROW(write_checkpoint_folder(f, shard, 32, std::nullopt, tmp.path().string(), true),
               std::invalid_argument);
  EXPECT_EQ(snapshot(in), before);
  // A failure while writing (an invalid tensor name) leaves no folder and no temporary.
  ResizedFile bad = shard;
  bad.tensors[0].set_name("__metadata__");
  EXPECT_THROW(write_checkpoint_folder(f, bad, 32, std::nullopt, (tmp.path() / "o2").string()),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(tmp.path() / "o2"));
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_NE(e.path().filename().string().rfind(".posemb-", 0), 0u) << e.path();
  }
}

// A folder made from tensors in memory (posemb make-checkpoint --folder): read back as a
// checkpoint folder, its index counting the bytes; refused before anything is written when the
// config, a shard's name or a tensor's is wrong, and the output rules of the folder writer.
TEST(CheckpointFolder, NewFolderFromTensors) {
  TempDir tmp;
  const std::string config = R"({"model_type": "gpt2", "n_positions": 16, "n_ctx": 16})";
  const std::vector<CheckpointShard> shards = {
      {kShard1, {f32("wte.weight", {10, 4}, 1)}},
      {kShard2, {f32("wpe.weight", {16, 4}, 2), f32("ln_f.weight", {4}, 3)}}};
  const fs::path out = tmp.path() / "gpt2";
  const auto files = write_new_checkpoint_folder(config, shards, {{"format", "pt"}}, out.string());
  EXPECT_EQ(files, (std::vector<std::string>{kShard1, kShard2, "config.json",
                                             "model.safetensors.index.json"}));
  EXPECT_EQ(read_all((out / "config.json").string()), config);
  const auto index =
      nlohmann::json::parse(read_all((out / "model.safetensors.index.json").string()));
  EXPECT_EQ(index["metadata"]["total_size"], (40 + 64 + 4) * 4);
  EXPECT_EQ(index["weight_map"]["wpe.weight"], kShard2);
  const CheckpointFolder f = read_checkpoint_folder(out.string());
  EXPECT_EQ(f.table_shard, kShard2);
  EXPECT_EQ(f.table_tensor, "wpe.weight");
  EXPECT_EQ(f.table_file.metadata.at("format"), "pt");
  EXPECT_TRUE(check_checkpoint_config(f.config_text, "c", f.table_file, "wpe.weight", 16).agrees());
  // One shard: model.safetensors and no index.
  const fs::path one = tmp.path() / "one";
  write_new_checkpoint_folder(config, {{"model.safetensors", shards[1].tensors}}, {}, one.string());
  EXPECT_EQ(snapshot(one).size(), 2u);
  // Refused, nothing written: not a JSON object, no shard, a name with a '/', a hidden name, two
  // shards of one name, a tensor in two shards, an existing folder without force.
  const auto before = snapshot(tmp.path());
  const fs::path o2 = tmp.path() / "o2";
  EXPECT_THROW(write_new_checkpoint_folder("[1]", shards, {}, o2.string()), FileFormatError);
  EXPECT_THROW(write_new_checkpoint_folder(config, {}, {}, o2.string()), std::invalid_argument);
  for (const char* bad : {"../x.safetensors", ".hidden.safetensors", "model.bin", "config.json"}) {
    EXPECT_THROW(write_new_checkpoint_folder(config, {{bad, shards[1].tensors}}, {}, o2.string()),
                 std::invalid_argument)
        << bad;
  }
  EXPECT_THROW(write_new_checkpoint_folder(config, {shards[0], {kShard1, shards[1].tensors}}, {},
                                           o2.string()),
               std::invalid_argument);
  EXPECT_THROW(write_new_checkpoint_folder(config, {shards[0], {kShard2, shards[0].tensors}}, {},
                                           o2.string()),
               std::invalid_argument);
  EXPECT_THROW(write_new_checkpoint_folder(config, shards, {}, out.string()),
               std::invalid_argument);
  EXPECT_EQ(snapshot(tmp.path()), before);
  // force replaces the folder whole.
  write_new_checkpoint_folder(config, {{"model.safetensors", shards[1].tensors}}, {}, out.string(),
                              true);
  EXPECT_EQ(snapshot(out).size(), 2u);
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_NE(e.path().filename().string().rfind(".posemb-", 0), 0u) << e.path();
  }
}

}  // namespace
}  // namespace posemb
