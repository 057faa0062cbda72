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
//
// Data parallelism (lab/distributed.hpp, lab/gradient_exchange.hpp): given a communicator of N
// ranks, every rank builds the same model from the seed (checked: the ranks compare a
// fingerprint of their state), computes its share of each step's micro-batches, and the
// gradients are summed in micro-batch order across ranks, so every rank takes the same optimizer
// step, with the same loss, gradient norm and clipping, as one process with the same batch and
// micro-batch. A failure on any rank ends the step on every rank (JobFailure); save() writes on
// rank 0 only.
//
//   lab::Trainer tr(run, lab::world());               // under mpirun: one share per rank
//   while (tr.step() < run.train.steps) tr.train_step();   // collective
//   tr.save("out/checkpoint.safetensors");            // collective; rank 0 writes
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lab/checkpoint.hpp"
#include "lab/config.hpp"
#include "lab/distributed.hpp"
#include "lab/gradient_exchange.hpp"
#include "lab/model.hpp"
#include "lab/task.hpp"
#include "posemb/optimizers.hpp"

namespace posemb::lab {

class Trainer {
 public:
  // Throws ConfigError (from RunConfig::validate) for unusable settings. With several ranks
  // (collective): throws JobFailure on every rank when any rank fails, or when the ranks' states
  // differ (different settings).
  explicit Trainer(const RunConfig& cfg, Communicator& comm = single_process());
  // A trainer restored from a checkpoint written by save(): parameters, AdamW state, step.
  // With several ranks, every rank reads path (collective; JobFailure on every rank when one
  // cannot, or when the ranks read different states).
  static Trainer load(const std::string& path, Communicator& comm = single_process());

  const RunConfig& config() const { return cfg_; }
  Model& model() { return model_; }
  std::size_t step() const { return step_; }
  float lr_at(std::size_t step) const;
  // Changes the length of the schedule (a resumed run trained further); keeps everything else.
  void set_total_steps(std::size_t steps);

  // The communicator; this rank's micro-batches of every step (all of them on one process).
  Communicator& communicator() { return *comm_; }
  std::span<const std::size_t> my_micro_batches() const { return exchange_.mine(); }
  std::size_t micro_batches() const { return exchange_.micro_batches(); }

  // One optimizer step on the batch of step(); returns its loss. Throws std::runtime_error,
  // before any parameter changes, when the loss is NaN or infinite (JobFailure with several
  // ranks, on every rank). Collective.
  double train_step();
  // Writes parameters, optimizer state, settings and step atomically (lab::write_checkpoint).
  // Collective: rank 0 writes; every rank throws JobFailure when the write fails.
  void save(const std::string& path);

 private:
  void verify_same_state(const char* what);
  std::uint64_t fingerprint();

  RunConfig cfg_;
  Communicator* comm_;
  Model model_;
  GradientExchange exchange_;
  std::vector<Activations> acts_;  // one per micro-batch of this rank
  std::vector<Gradients> grads_;   // one per micro-batch of this rank
  std::vector<double> losses_;     // (micro_batches) every micro-batch's, after a step
  AdamW opt_;
  Batch batch_, sorted_;
  std::size_t step_ = 0;
};

}  // namespace posemb::lab
