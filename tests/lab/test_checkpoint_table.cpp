// A lab checkpoint with its table resized (lab/train/checkpoint_table.hpp: the lab's side of
// `posemb resize`), and the lab reading the table's resizes as data: posemb.resizes, or the
// "resize: ..." text of a checkpoint resized before posemb.resizes existed.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "lab/train/checkpoint.hpp"
#include "lab/train/checkpoint_table.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/table_provenance.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

// A trained (3 steps) learned-table checkpoint at path: 3 symbols, symbols::tokens(3) = 8 rows.
RunConfig save_tiny_checkpoint(const std::string& path) {
  RunConfig r = testing::tiny_run_config("learned", 3, 4, 32);
  r.train.batch = 8;
  r.train.micro_batch = 4;
  r.train.warmup = 1;
  r.train.steps = 3;
  Trainer tr(r);
  while (tr.step() < r.train.steps) tr.train_step();
  tr.save(path);
  return r;
}

TEST(CheckpointTable, ResizingKeepsTheRunSettingsTrueAndTheLabTrainsFromIt) {
  test::TempDir dir;
  const std::string base = dir.file("base.safetensors"), out = dir.file("long.safetensors");
  save_tiny_checkpoint(base);
  const TensorFile f = read_tensor_file(base);
  ASSERT_TRUE(is_lab_checkpoint(f.metadata));
  FileResizeRequest req;
  req.output = out;
  req.positions = symbols::tokens(6);
  req.method = ResizeMethod::interpolate;
  const FileResize r = resize_checkpoint_table(f, base, req);
  EXPECT_TRUE(r.whole_file);
  EXPECT_EQ(r.old_rows, symbols::tokens(3));
  EXPECT_EQ(r.table.values.rows(), symbols::tokens(6));
  const auto fit = table_fit(r.file.metadata, r.table.values.rows());
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->train_len, 6u);
  EXPECT_EQ(fit->length_rule, "2 n + 2");
  // The written file: the new rows in the run settings, the resize as data.
  const TensorFile w = read_safetensors(out);
  EXPECT_EQ(RunConfig::from_json(w.metadata.at("posemb.lab.run")).model.max_seq_len,
            symbols::tokens(6));
  const auto resizes = recorded_resizes(w.metadata, out);
  ASSERT_EQ(resizes.size(), 1u);
  EXPECT_EQ(resizes[0].method, "interpolate");
  EXPECT_EQ(resizes[0].from_positions, symbols::tokens(3));
  EXPECT_EQ(resizes[0].to_positions, symbols::tokens(6));
  EXPECT_EQ(resizes[0].source_file, base);
  // The lab starts a run from it, at the longer length, and tells the table's lineage.
  RunConfig next = read_checkpoint(out).run;
  next.task.train_len = 6;
  next.train.steps = 1;
  const Trainer t = Trainer::from_checkpoint(out, next);
  EXPECT_EQ(t.config().model.max_seq_len, symbols::tokens(6));
  EXPECT_NE(t.lineage().find(", its table: posemb train (learned, step 3); resize: interpolate 8 "
                             "-> 14 positions"),
            std::string::npos)
      << t.lineage();
}

TEST(CheckpointTable, TableOnlyOutputsAndOtherFilesAreTheLibrarys) {
  test::TempDir dir;
  const std::string base = dir.file("base.safetensors");
  save_tiny_checkpoint(base);
  FileResizeRequest req;
  req.output = dir.file("wpe.npy");
  req.positions = 10;
  const FileResize r = resize_checkpoint_table(read_tensor_file(base), base, req);
  EXPECT_FALSE(r.whole_file);
  const std::uint64_t dim = read_checkpoint(base).run.model.d_model;
  EXPECT_EQ(read_npy(req.output).shape(), (std::vector<std::uint64_t>{10, dim}));
  EXPECT_FALSE(is_lab_checkpoint({{"posemb.tensor", "wpe.weight"}}));
  const Metadata md = read_tensor_file(base).metadata;
  EXPECT_EQ(table_fit(md, 1)->train_len, 0u);
  EXPECT_EQ(table_fit(md, 3)->train_len, 0u);
  EXPECT_EQ(table_fit(md, 4)->train_len, 1u);
  EXPECT_EQ(table_fit(md, 9)->train_len, 3u);
  EXPECT_FALSE(table_fit({{"posemb.lab.run", "{}"}}, 9).has_value());
}

TEST(CheckpointTable, ACheckpointResizedBeforePosembResizesExistedStillTellsItsTable) {
  test::TempDir dir;
  const std::string base = dir.file("base.safetensors"), old = dir.file("old.safetensors");
  save_tiny_checkpoint(base);
  // The checkpoint as an older posemb wrote it: the resize only in the provenance text.
  const TensorFile f = read_tensor_file(base);
  FileResizeRequest req;
  req.output = dir.file("unused.safetensors");
  req.positions = symbols::tokens(5);
  FileResize r = plan_file_resize(f, base, req);
  r.file.metadata.erase(std::string(kResizesKey));
  r.file.metadata["posemb.provenance"] =
      "posemb train (learned, step 3); resize: copy 8 -> 12 positions, from 'base.safetensors' "
      "tensor 'wpe.weight'";
  write_safetensors(old, r.file.tensors, r.file.metadata);
  const TensorFile w = read_safetensors(old);
  const auto resizes = recorded_resizes(w.metadata, old);
  ASSERT_EQ(resizes.size(), 1u);
  EXPECT_EQ(resizes[0].method, "copy");
  EXPECT_EQ(resizes[0].to_positions, 12u);
  RunConfig next = read_checkpoint(old).run;
  next.train.steps = 1;
  const Trainer t = Trainer::from_checkpoint(old, next);
  EXPECT_NE(t.lineage().find(", its table: posemb train (learned, step 3); resize: copy 8 -> 12"),
            std::string::npos)
      << t.lineage();
  // A checkpoint never resized says nothing about its table.
  const Trainer plain = Trainer::from_checkpoint(base, next);
  EXPECT_EQ(plain.lineage().find("its table"), std::string::npos) << plain.lineage();
}

}  // namespace
}  // namespace posemb::lab
