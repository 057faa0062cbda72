// lab/trainer.hpp: training the lab model on a task, checkpoints, resume.
//
//   lab::RunConfig run;                               // model, task, optimizer settings
//   run.model.pe = lab::PeKind::sinusoidal;
//   lab::Trainer tr(run);                             // parameters initialized from run.train.seed
//   while (tr.step() < run.train.steps) tr.train_step();
//   tr.save("out/checkpoint.safetensors");            // atomic; with the AdamW state
//   auto again = lab::Trainer::load("out/checkpoint.safetensors");   // continues bit for bit
//
// Determinism: the batch of step s is a function of (seed, s), the parameters of the seed, and
// every kernel is independent of the thread count, so a run, a resumed run, and a run on another
// thread count give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/layer_api.hpp"
#include "lab/model.hpp"
#include "lab/task.hpp"

namespace posemb::lab {

struct TrainConfig {
  std::size_t batch = 32;
  // Sequences per micro-batch: micro-batches run in parallel (one per thread at a time) and
  // their gradients are summed in micro-batch order, so the result does not depend on threads.
  std::size_t micro_batch = 8;
  // Order the batch's rows by length before cutting micro-batches, and run each micro-batch only
  // as long as its longest sequence (same gradient as padding everything to the longest, less
  // work). Off: every micro-batch is padded to 2*train_len+2 (what `posemb bench` measures, the
  // same work as the PyTorch peer).
  bool sort_by_length = true;
  std::size_t steps = 1000;
  std::size_t warmup = 50;  // linear warmup steps, then cosine decay to min_lr_ratio * lr
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.98f;
  float grad_clip = 1.0f;  // global gradient norm; 0 disables
  std::uint64_t seed = 1;
  void validate() const;
};

struct RunConfig {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  // The settings as JSON (the checkpoint's metadata) and back.
  std::string to_json() const;
  static RunConfig from_json(const std::string& text);
};

// Everything a checkpoint holds.
class Trainer {
 public:
  explicit Trainer(const RunConfig& cfg);
  // A trainer restored from a checkpoint written by save(): parameters, AdamW state, step.
  static Trainer load(const std::string& path);

  const RunConfig& config() const { return cfg_; }
  Model& model() { return model_; }
  std::size_t step() const { return step_; }
  float lr_at(std::size_t step) const;
  // Changes the length of the schedule (a resumed run trained further); keeps everything else.
  void set_total_steps(std::size_t steps);

  // One optimizer step on the batch of step(); returns its loss. Throws std::runtime_error,
  // before any parameter changes, when the loss is NaN or infinite.
  double train_step();
  // Writes parameters, optimizer state, settings and step atomically.
  void save(const std::string& path) const;

 private:
  RunConfig cfg_;
  Model model_;
  std::vector<Activations> acts_;     // one per micro-batch
  std::vector<Matrix<float>> grads_;  // (1, arena) per micro-batch
  std::vector<double> losses_;
  AdamW opt_;
  Batch batch_, sorted_;
  std::size_t step_ = 0;
};

// The model of a checkpoint, for evaluation: settings from its metadata, parameters from its
// tensors. table_path (optional): a position table file (e.g. made by `posemb resize` from the
// checkpoint) that replaces the checkpoint's learned table; its number of positions becomes
// max_seq_len (reserved rows, if any, are skipped). Also returns the run settings.
Model load_model(const std::string& path, RunConfig* settings = nullptr,
                 const std::string& table_path = {});

}  // namespace posemb::lab
