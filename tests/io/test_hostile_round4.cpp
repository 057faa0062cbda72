// Hostile input, round 4 (issue 46), in the library: size products checked where they are
// formed (grids, image sizes, square roots), derived config values and every length key, views
// that alias each other, work bounded before it starts, the memory budget under an
// address-space limit.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "file_test_util.hpp"
#include "io/grid_math.hpp"
#include "posemb/alibi.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_precision.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::message_of;

namespace fs = std::filesystem;
using test::read_all;
using test::TempDir;
using test::write_all;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
// Sizes around every place a product wraps.
const std::vector<std::size_t> kEdges = {0,
                                         1,
                                         2,
                                         3,
                                         (std::size_t{1} << 32) - 1,
                                         std::size_t{1} << 32,
                                         (std::size_t{1} << 32) + 1,
                                         std::size_t{1} << 62,
                                         std::size_t{1} << 63,
                                         (std::size_t{1} << 63) + 1,
                                         kMax - 1,
                                         kMax};

bool product_fits(std::size_t a, std::size_t b) {
  return a == 0 || b <= kMax / a;
}

// ---- size products ----

TEST(SizeProducts, CheckedArithmeticThrowsExactlyWhenTheResultWouldWrap) {
  for (const std::size_t a : kEdges) {
    for (const std::size_t b : kEdges) {
      if (product_fits(a, b)) {
        EXPECT_EQ(checked_mul(a, b, "op", "x"), a * b);
        EXPECT_EQ((GridShape{a, b}.cells()), a * b);
      } else {
        EXPECT_THROW(checked_mul(a, b, "op", "x"), std::length_error) << a << " x " << b;
        const GridShape g{a, b};
        EXPECT_THROW((void)g.cells(), std::length_error) << a << " x " << b;
      }
      const bool sum_fits = a <= kMax - b;
      if (sum_fits) {
        EXPECT_EQ(checked_add(a, b, "op", "x"), a + b);
      } else {
        EXPECT_THROW(checked_add(a, b, "op", "x"), std::length_error);
      }
    }
  }
  const std::string m = message_of<std::length_error>([] {
    (void)GridShape{(std::size_t{1} << 63) + 1, 2}.cells();
  });
  EXPECT_NE(m.find("9223372036854775809x2"), std::string::npos) << m;
}

TEST(SizeProducts, GridsThatWrapAreRefusedAndNothingIsWritten) {
  // (2^63 + 1) x 2 wrapped to 2 cells: a 2-row grid passed, and the interpolation wrote past it.
  const Matrix<float> two(2, 3);
  Matrix<float> out(4, 3);
  for (float& v : out.flat()) v = 7.0f;
  for (const std::size_t a : kEdges) {
    for (const std::size_t b : kEdges) {
      if (product_fits(a, b)) continue;
      const std::string m = message_of<std::length_error>([&] {
        interpolate_grid(two, {a, b}, out, {2, 2}, GridMethod::bicubic);
      });
      EXPECT_EQ(m.rfind("interpolate_grid: from ", 0), 0u) << m;
      EXPECT_THROW(interpolate_grid(two, {2, 1}, out, {a, b}, GridMethod::bilinear),
                   std::length_error);
      PositionTable t;
      t.values = Matrix<float>(3, 4);
      EXPECT_THROW(vision_layout(t, TableClass{TableKind::vision, 1, "ViT"}, {1, GridShape{a, b}}),
                   std::length_error);
      VisionLayout bad{1, {a, b}, ""};
      EXPECT_THROW(resize_grid(t, bad, {2, 1}, GridMethod::bicubic), std::length_error);
    }
  }
  for (const float v : out.flat()) ASSERT_EQ(v, 7.0f);
}

TEST(SizeProducts, TheIntermediateGridIsCheckedAgainstTheBudget) {
  // A 65536 x 1 grid resized to 1 x 65536: the width pass would hold 65536^2 x C doubles.
  const Matrix<float> tall(65536, 2);
  Matrix<float> wide(65536, 2);
  const std::string m = message_of<MemoryLimitExceeded>([&] {
    interpolate_grid(tall, {65536, 1}, wide, {1, 65536}, GridMethod::bilinear);
  });
  EXPECT_EQ(m.rfind("interpolate_grid: needs ", 0), 0u) << m;
  EXPECT_THROW(interpolate_grid(tall, {65536, 1}, wide, {1, 65536}, GridMethod::bilinear),
               MemoryLimitExceeded);
}

TEST(SizeProducts, SquareRootsOfEverySizeTerminate) {
  const VisionLayout layout{1, {1, 1}, ""};
  for (const std::size_t n : kEdges) {
    const std::size_t r = detail::floor_sqrt(n);
    EXPECT_LE(r * r, n);  // r < 2^32: r * r fits
    EXPECT_TRUE(!product_fits(r + 1, r + 1) || (r + 1) * (r + 1) > n) << n;
    try {
      const GridShape g = square_grid_for_rows(n, layout);  // 1 prefix token, then a square
      EXPECT_EQ(g.height, g.width);
      EXPECT_EQ(g.cells() + 1, n);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("do not make a square grid"), std::string::npos);
    }
  }
  EXPECT_EQ(detail::floor_sqrt(kMax), 0xFFFFFFFFu);
  EXPECT_EQ(detail::floor_sqrt((std::size_t{1} << 32) * (std::size_t{1} << 31)), 3037000499u);
}

// ---- checkpoint folders: derived values and length keys ----

Tensor f32(const std::string& name, std::vector<std::uint64_t> shape) {
  std::uint64_t n = 1;
  for (auto s : shape) n *= s;
  const std::vector<float> v(n, 0.25f);
  return Tensor::from_bytes(name, DType::F32, std::move(shape),
                            std::as_bytes(std::span<const float>(v)));
}

// A ViT folder: 1 class token and a 3x3 grid (10 rows), patch_size as given.
fs::path vit_folder(const TempDir& dir, const std::string& patch) {
  const fs::path m = dir.file("vit");
  fs::create_directories(m);
  write_safetensors((m / "model.safetensors").string(),
                    {f32("vit.embeddings.position_embeddings", {1, 10, 4})});
  write_all((m / "config.json").string(),
            R"({"model_type": "vit", "image_size": 48, "patch_size": )" + patch + "}");
  return m;
}

TEST(FolderConfig, AnImageSizeThatWouldWrapOrPassAJsonNumberIsRefused) {
  TempDir dir;
  const CheckpointFolder f =
      read_checkpoint_folder(vit_folder(dir, "4611686018427387904").string());
  PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const VisionLayout v = vision_layout(t, classify_table(f.table_file, f.table_tensor));
  const PositionTable big = resize_grid(t, v, {4, 4}, GridMethod::bicubic);
  const ResizedFile shard = replace_position_table(f.table_file, big);
  const std::string m = message_of<std::invalid_argument>([&] {
    write_checkpoint_folder(f, shard, 17, GridShape{4, 4}, dir.file("out"));
  });
  EXPECT_NE(m.find("past 2^53"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(dir.file("out")));
  // The check reports it and does not wrap either: 2^62 x 3 is no image size.
  const ConfigCheck c =
      check_checkpoint_config(f.config_text, "config.json", f.table_file, f.table_tensor, 10);
  ASSERT_EQ(c.lengths.size(), 1u);
  EXPECT_FALSE(c.agrees());
}

TEST(FolderConfig, AGridThatDoesNotMakeTheTablesRowsIsRefused) {
  TempDir dir;
  const CheckpointFolder f = read_checkpoint_folder(vit_folder(dir, "16").string());
  PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const ResizedFile same = replace_position_table(f.table_file, t);
  // The 3x3 table written with a 24x24 grid gave image_size 384.
  for (const GridShape g : {GridShape{24, 24}, GridShape{3, 4}, GridShape{2, 5},
                            GridShape{(std::size_t{1} << 63) + 1, 2}}) {
    const std::string m = message_of<std::invalid_argument>(
        [&] { write_checkpoint_folder(f, same, 10, g, dir.file("out")); });
    EXPECT_NE(m.find("the table written has 10"), std::string::npos) << m;
    EXPECT_FALSE(fs::exists(dir.file("out")));
  }
  write_checkpoint_folder(f, same, 10, GridShape{3, 3}, dir.file("out"));
  EXPECT_EQ(nlohmann::json::parse(read_all(dir.file("out/config.json")))["image_size"], 48);
}

fs::path gpt2_folder(const TempDir& dir, const std::string& config) {
  const fs::path m = dir.file("gpt2");
  fs::create_directories(m);
  write_safetensors((m / "model.safetensors").string(), {f32("wpe.weight", {16, 4})});
  write_all((m / "config.json").string(), config);
  return m;
}

TEST(FolderConfig, EveryKeyALoaderReadsForTheLengthIsCheckedAndWritten) {
  TempDir dir;
  // GPT2Config reads max_position_embeddings as n_positions, after it.
  const CheckpointFolder f = read_checkpoint_folder(
      gpt2_folder(dir, R"({"model_type": "gpt2", "n_positions": 16, "n_ctx": 16,
 "max_position_embeddings": 1024})")
          .string());
  const ConfigCheck c =
      check_checkpoint_config(f.config_text, "config.json", f.table_file, f.table_tensor, 16);
  EXPECT_FALSE(c.agrees());
  ASSERT_EQ(c.lengths.size(), 3u);
  EXPECT_EQ(c.lengths[2].key, "max_position_embeddings");
  EXPECT_EQ(c.lengths[2].value, "1024");
  PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const PositionTable longer = resize_table(t, 32, ResizeMethod::copy);
  write_checkpoint_folder(f, replace_position_table(f.table_file, longer), 32, std::nullopt,
                          dir.file("out"));
  const auto j = nlohmann::json::parse(read_all(dir.file("out/config.json")));
  EXPECT_EQ(j["n_positions"], 32);
  EXPECT_EQ(j["n_ctx"], 32);
  EXPECT_EQ(j["max_position_embeddings"], 32);
}

TEST(FolderConfig, ClipsDictKeysAreWrittenToo) {
  TempDir dir;
  const fs::path m = dir.file("clip");
  fs::create_directories(m);
  write_safetensors((m / "model.safetensors").string(),
                    {f32("text_model.embeddings.position_embedding.weight", {8, 4}),
                     f32("vision_model.embeddings.position_embedding.weight", {5, 4})});
  write_all((m / "config.json").string(), R"({"model_type": "clip",
 "text_config": {"max_position_embeddings": 8}, "text_config_dict": {"max_position_embeddings": 8},
 "vision_config": {"image_size": 32, "patch_size": 16},
 "vision_config_dict": {"image_size": 32, "patch_size": 16}})");
  const CheckpointFolder f =
      read_checkpoint_folder(m.string(), "text_model.embeddings.position_embedding.weight");
  PositionTable t = load_position_table(f.table_file, f.table_path(), f.table_tensor);
  const PositionTable longer = resize_table(t, 12, ResizeMethod::copy);
  write_checkpoint_folder(f, replace_position_table(f.table_file, longer), 12, std::nullopt,
                          dir.file("out"));
  const auto j = nlohmann::json::parse(read_all(dir.file("out/config.json")));
  EXPECT_EQ(j["text_config"]["max_position_embeddings"], 12);
  EXPECT_EQ(j["text_config_dict"]["max_position_embeddings"], 12);
  // Vision: both image sizes.
  const CheckpointFolder v =
      read_checkpoint_folder(m.string(), "vision_model.embeddings.position_embedding.weight");
  PositionTable vt = load_position_table(v.table_file, v.table_path(), v.table_tensor);
  const PositionTable bigger =
      resize_grid(vt, vision_layout(vt, classify_table(v.table_file, v.table_tensor)), {3, 3},
                  GridMethod::bicubic);
  write_checkpoint_folder(v, replace_position_table(v.table_file, bigger), 10, GridShape{3, 3},
                          dir.file("out2"));
  const auto k = nlohmann::json::parse(read_all(dir.file("out2/config.json")));
  EXPECT_EQ(k["vision_config"]["image_size"], 48);
  EXPECT_EQ(k["vision_config_dict"]["image_size"], 48);
}

TEST(FolderConfig, ACheckOfEveryRowCountTerminates) {
  TempDir dir;
  const CheckpointFolder f = read_checkpoint_folder(vit_folder(dir, "16").string());
  for (const std::size_t rows : kEdges) {
    const ConfigCheck c =
        check_checkpoint_config(f.config_text, "config.json", f.table_file, f.table_tensor, rows);
    EXPECT_EQ(c.agrees(), rows == 10) << rows;
  }
}

TEST(FolderPaths, ANulByteInAnyPathIsRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  const fs::path m = gpt2_folder(dir, R"({"model_type": "gpt2", "n_positions": 16})");
  const CheckpointFolder f = read_checkpoint_folder(m.string());
  const ResizedFile same = replace_position_table(
      f.table_file, load_position_table(f.table_file, f.table_path(), f.table_tensor));
  const std::string cut = dir.file("o") + std::string("\0ut", 3);
  EXPECT_NE(message_of<std::invalid_argument>([&] {
              write_checkpoint_folder(f, same, 16, std::nullopt, cut);
            }).find("NUL byte"),
            std::string::npos);
  EXPECT_NE(message_of<std::invalid_argument>([&] {
              (void)read_checkpoint_folder(m.string() + std::string("\0x", 2));
            }).find("NUL byte"),
            std::string::npos);
  // A new folder from tensors in memory: its folder, and a weight file's name inside it.
  const std::vector<CheckpointShard> shards = {{"model.safetensors", f.table_file.tensors}};
  EXPECT_NE(message_of<std::invalid_argument>([&] {
              (void)write_new_checkpoint_folder("{}", shards, {}, cut);
            }).find("NUL byte"),
            std::string::npos);
  const std::vector<CheckpointShard> cut_shard = {
      {std::string("model\0x.safetensors", 19), f.table_file.tensors}};
  EXPECT_NE(message_of<std::invalid_argument>([&] {
              (void)write_new_checkpoint_folder("{}", cut_shard, {}, dir.file("new"));
            }).find("is not a distinct plain file name"),
            std::string::npos);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"gpt2"});
}

TEST(FolderPaths, AnOutputThatIsTheInputUnderAnotherSpellingIsRefused) {
  TempDir dir;
  const fs::path m = gpt2_folder(dir, R"({"model_type": "gpt2", "n_positions": 16})");
  fs::create_directory_symlink(m, dir.file("alias"));
  const CheckpointFolder f = read_checkpoint_folder(m.string());
  const ResizedFile same = replace_position_table(
      f.table_file, load_position_table(f.table_file, f.table_path(), f.table_tensor));
  for (const std::string& out : std::vector<std::string>{
           m.string(), dir.file("gpt2/."), dir.file("gpt2/../gpt2"), dir.file("alias"),
           dir.file("alias/sub/new"), dir.file("."), dir.path().string() + "/"}) {
    const std::string msg = message_of<std::invalid_argument>(
        [&] { write_checkpoint_folder(f, same, 16, std::nullopt, out, true); });
    EXPECT_NE(msg.find("input folder"), std::string::npos) << out << ": " << msg;
  }
  EXPECT_EQ(read_all((m / "config.json").string()), R"({"model_type": "gpt2", "n_positions": 16})");
}

// ---- views that alias ----

TEST(Aliasing, OutputsThatShareMemoryWithWhatIsReadAreRefused) {
  // alibi_backward: dslopes a view of dscores (its first row).
  Matrix<float> dscores(2 * 4, 8);
  for (std::size_t i = 0; i < dscores.size(); ++i) dscores.flat()[i] = static_cast<float>(i);
  const Matrix<float> before(dscores);
  const std::span<float> inside(dscores.row(0).data(), 2);
  const std::string m =
      message_of<std::invalid_argument>([&] { alibi_backward(dscores, inside, 2, 1, 4); });
  EXPECT_NE(m.find("alibi_backward: dslopes"), std::string::npos) << m;
  EXPECT_EQ(std::memcmp(before.data(), dscores.data(), dscores.size() * sizeof(float)), 0);
  // alibi_forward: slopes read from inside the scores being written.
  EXPECT_THROW(alibi_forward(dscores, std::span<const float>(dscores.row(3).data(), 2), 1, 4),
               std::invalid_argument);
  EXPECT_EQ(std::memcmp(before.data(), dscores.data(), dscores.size() * sizeof(float)), 0);
  // Separate buffers are fine.
  std::vector<float> d(2, 0.0f);
  alibi_backward(dscores, d, 2, 1, 4);
  // Rope::angles: cos and sin overlapping.
  const Rope rope(8, RopeLayout::half);
  std::vector<float> buf(6);
  EXPECT_THROW(rope.angles(3, std::span<float>(buf).first(4), std::span<float>(buf).last(4)),
               std::invalid_argument);
  // interpolate_grid: out over the grid it reads.
  Matrix<float> grid(8, 2);
  const MatrixView<float> all = grid.view();
  interpolate_grid(all.subrows(0, 4), {2, 2}, all.subrows(4, 4), {2, 2}, GridMethod::bicubic);
  EXPECT_THROW(
      interpolate_grid(all.subrows(0, 4), {2, 2}, all.subrows(2, 4), {2, 2}, GridMethod::bicubic),
      std::invalid_argument);
}

// ---- work and memory ----

TEST(WorkLimits, AnglePrecisionPastItsWorkIsRefusedAtOnce) {
  const Rope wide(65536, RopeLayout::half);  // 32768 pairs
  EXPECT_EQ(rope_angle_precision_work(wide, std::size_t{1} << 20), std::size_t{1} << 35);
  const std::string m = message_of<std::invalid_argument>(
      [&] { (void)rope_angle_precision(wide, std::size_t{1} << 20); });
  EXPECT_NE(m.find("34359738368 angle checks"), std::string::npos) << m;
  EXPECT_THROW((void)rope_angle_precision(wide, kMax), std::invalid_argument);
  const Rope small(8, RopeLayout::half);
  EXPECT_EQ(rope_angle_precision(small, 100).size(), 3u);
}

// The bytes of address space this process maps now (/proc/self/statm).
std::size_t mapped_now() {
  std::size_t pages = 0;
  std::istringstream(read_all("/proc/self/statm")) >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Runs f in a child process whose address space may grow by `room` bytes (RLIMIT_AS); its exit
// status.
int with_address_room(std::size_t room, const std::function<int(std::size_t)>& f) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::size_t limit = mapped_now() + room;
    struct rlimit rl {
      limit, limit
    };
    if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(10);
    ::_exit(f(limit));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Memory, TheBudgetFollowsTheAddressSpaceLimit) {
  // The default budget is at most half the limit, and an allocation the address space left cannot
  // hold is MemoryLimitExceeded (naming ulimit -v), not std::bad_alloc, whatever the budget.
  EXPECT_EQ(
      with_address_room(std::size_t{1} << 30,
                        [](std::size_t limit) {
                          if (default_memory_limit() > std::max<std::size_t>(limit / 2, 1u << 20)) {
                            return 1;
                          }
                          set_memory_limit(std::size_t{64} << 30);
                          try {
                            Matrix<float> m(std::size_t{1} << 30, 1);  // 4 GiB
                            return 2;
                          } catch (const MemoryLimitExceeded& e) {
                            const std::string w = e.what();
                            return w.find("ulimit -v") != std::string::npos ? 0 : 3;
                          } catch (const std::bad_alloc&) {
                            return 4;
                          }
                        }),
      0);
}

}  // namespace
}  // namespace posemb
