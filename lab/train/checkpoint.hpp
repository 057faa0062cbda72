// lab/train/checkpoint.hpp: the lab's checkpoints (safetensors: every parameter, the AdamW moments,
// the run settings and the step in the metadata), written and read.
//
//   lab::write_checkpoint("out/checkpoint.safetensors", model, opt, run, step);   // atomic
//   lab::Checkpoint ck = lab::read_checkpoint("out/checkpoint.safetensors");
//   lab::Model model(ck.run.model);  lab::load_tensors(model, ck);
//   lab::Model eval = lab::load_model("out/checkpoint.safetensors");   // settings + weights
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "lab/config.hpp"
#include "lab/model/model.hpp"
#include "posemb/matrix.hpp"
#include "posemb/optimizers.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::lab {

// The `format` metadata value of a lab checkpoint.
inline constexpr const char* kCheckpointFormat = "posemb-lab-checkpoint/1";

// A lab checkpoint read from a file: its tensors (views over the mapped file) and its metadata,
// decoded.
struct Checkpoint {
  std::string path;
  TensorFile file;
  RunConfig run;                 // posemb.lab.run (model.max_seq_len: the learned table's rows)
  std::size_t step = 0;          // posemb.lab.step
  std::int64_t adamw_steps = 0;  // posemb.lab.adamw_steps
  std::string lineage;           // posemb.lab.lineage: where the run's weights came from, or ""
  // The float32 values of tensor `name`; throws FileFormatError naming the file when absent.
  Matrix<float> tensor(const std::string& name) const;
};

// A checkpoint's metadata comes from a file: it is untrusted. decode_checkpoint_metadata
// checks every entry before anything is built from it: `format` is kCheckpointFormat;
// posemb.lab.run is a run configuration (RunConfig::from_json: typed, bounded, within the lab's
// limits; then lab::validate_run: a registered encoding and task that fit); posemb.lab.step and
// posemb.lab.adamw_steps are whole numbers in [0, limits::steps.max] written in decimal digits
// only. Throws posemb::FileFormatError
// "'PATH': checkpoint metadata KEY: problem" naming the file and the key. Fills path, run, step
// and adamw_steps of the result (not file).
Checkpoint decode_checkpoint_metadata(const Metadata& metadata, const std::string& path);

// Checks the tensors of a checkpoint against its run settings, reading shapes only: every
// tensor of the model (Model::tensor_shapes) is present, 2-D, a float dtype and of the model's
// shape; the learned table may have other rows than the settings say (a table resized by
// `posemb resize`), within the limits and at least the longest training sequence: its rows
// become ck.run.model.max_seq_len. Throws FileFormatError naming the file and the tensor.
void check_checkpoint_tensors(Checkpoint& ck);

// Writes the model's tensors, the optimizer's moments, the settings and the step to path,
// atomically (posemb::write_safetensors). Models with a learned table also get the position
// table metadata (posemb.tensor, posemb.training_length, ...), so `posemb inspect` and `resize`
// find the table. lineage (Trainer::lineage(): where the run's weights came from) is kept in
// posemb.lab.lineage and the table's posemb.provenance.
void write_checkpoint(const std::string& path, Model& model, const AdamW& opt, const RunConfig& cfg,
                      std::size_t step, const std::string& lineage = {});

// Reads and checks a checkpoint written by write_checkpoint (decode_checkpoint_metadata, then
// check_checkpoint_tensors): a file that is not one throws FileFormatError naming the file.
Checkpoint read_checkpoint(const std::string& path);

// Copies every tensor of the model from the checkpoint (but the learned table's when
// skip_table); throws FileFormatError naming the tensor and the file when one is missing, of
// another shape, or holds NaN or infinity.
void load_tensors(Model& model, const Checkpoint& ck, bool skip_table = false);

// The AdamW moments and step count of the checkpoint into opt (nothing when it has none); the
// moments must match the parameters' shapes and be finite (second moments >= 0), checked
// before opt changes.
void load_optimizer_state(AdamW& opt, Model& model, const Checkpoint& ck);

// dst = src, throwing (naming tensor `name` of file `path`) when the shapes differ.
void copy_into(MatrixView<float> dst, MatrixView<const float> src, const std::string& name,
               const std::string& path);

// The model of a checkpoint, for evaluation: settings from its metadata, parameters from its
// tensors. table_path (optional): a position table file (e.g. made by `posemb resize` from the
// checkpoint) that replaces the checkpoint's learned table; its number of positions becomes
// max_seq_len (reserved rows, if any, are skipped). rope_scaling (optional): a RoPE scaling
// (method and factor) replacing the checkpoint's, its L0 from rope_scaling_for; unset: the
// checkpoint's own (none, or the one it was fine-tuned with). Throws ConfigError (fields
// model.rope_scaling, model.rope_factor) when the model cannot take it (no rotation, a factor
// out of range). Also returns the run settings.
Model load_model(const std::string& path, RunConfig* settings = nullptr,
                 const std::string& table_path = {},
                 const std::optional<RopeScalingConfig>& rope_scaling = std::nullopt);

}  // namespace posemb::lab
