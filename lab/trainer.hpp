// lab/trainer.hpp: training the lab model on a task, checkpoints, resume.
//
//   lab::RunConfig run;                               // model, task, optimizer settings
//   run.model.pe = "sinusoidal";
//   lab::Trainer tr(run);                             // validated; initialized from the seed
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

#include "lab/checkpoint.hpp"
#include "lab/config.hpp"
#include "lab/model.hpp"
#include "lab/task.hpp"
#include "posemb/optimizers.hpp"

namespace posemb::lab {

class Trainer {
 public:
  // Throws ConfigError (from RunConfig::validate) for unusable settings, MemoryLimitExceeded
  // (before allocating) when memory_bytes(cfg) exceeds the memory budget (posemb/memory.hpp).
  explicit Trainer(const RunConfig& cfg);
  // The bytes a Trainer of cfg allocates (an upper bound, saturating): the model, AdamW's
  // moments, each micro-batch's gradients and activations, the batch.
  static std::size_t memory_bytes(const RunConfig& cfg);
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
  void save(const std::string& path);

 private:
  RunConfig cfg_;
  Model model_;
  std::vector<Activations> acts_;  // one per micro-batch
  std::vector<Gradients> grads_;   // one per micro-batch
  std::vector<double> losses_;
  AdamW opt_;
  Batch batch_, sorted_;
  std::size_t step_ = 0;
};

}  // namespace posemb::lab
