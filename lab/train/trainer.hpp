// lab/train/trainer.hpp: training the lab model on a task, checkpoints, resume.
//
//   lab::RunConfig run;                               // model, task, optimizer settings
//   run.model.pe = "sinusoidal";
//   lab::Trainer tr(run);                             // validated; initialized from the seed
//   while (tr.step() < run.train.steps) tr.train_step();
//   tr.save("out/checkpoint.safetensors");            // atomic; with the AdamW state
//   auto again = lab::Trainer::load("out/checkpoint.safetensors");   // continues bit for bit
//
//   // A new run from a trained model: its weights, a resized table, new task and training
//   // settings (the model's shape is the checkpoint's), a fresh optimizer, step 0.
//   lab::RunOverrides next;                           // lab/config.hpp: merge_run
//   next.values.task.train_len = 16;  next.fields.push_back("task.train_len");
//   auto ft = lab::Trainer::from_checkpoint("base/checkpoint.safetensors", next,
//                                           "wpe-copy.safetensors");
//
// Determinism: the batch of step s is a function of (seed, s), the parameters of the seed, and
// every kernel is independent of the thread count, so a run, a resumed run, and a run on another
// thread count give the same bits.
//
// Data parallelism (lab/ranks/distributed.hpp, lab/ranks/gradient_exchange.hpp): given a
// communicator of N ranks, every rank builds the same model from the seed (checked: the ranks
// compare a fingerprint of their state), computes its share of each step's micro-batches, and the
// gradients are summed in micro-batch order across ranks, each rank summing and updating (AdamW
// over a range) its range of the parameters, which are then gathered on every rank: the same
// loss, gradient norm, clipping and parameters as one process with the same batch and
// micro-batch. A failure on any rank ends the step on every rank (JobFailure); save() writes on
// rank 0 only.
//
//   lab::Trainer tr(run, lab::world());               // under mpirun: one share per rank
//   while (tr.step() < run.train.steps) tr.train_step();   // collective
//   tr.save("out/checkpoint.safetensors");            // collective; rank 0 writes
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/model/model.hpp"
#include "lab/ranks/distributed.hpp"
#include "lab/ranks/gradient_exchange.hpp"
#include "lab/tasks/task.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "posemb/optimizers.hpp"

namespace posemb::lab {

class Trainer {
 public:
  // Throws ConfigError (from lab::validate_run) for unusable settings, MemoryLimitExceeded
  // (before allocating) when memory_bytes(cfg) exceeds the memory budget (posemb/memory.hpp),
  // then ConfigError when the run's work is past limits::train_work (check_training_work).
  // With several ranks (collective): throws JobFailure on every rank when any rank fails, or
  // when the ranks' states differ (different settings).
  explicit Trainer(const RunConfig& cfg, Communicator& comm = single_process());
  // The bytes a Trainer of cfg allocates (an upper bound, saturating): the model, AdamW's
  // moments, each micro-batch's gradients and activations, the batch; on `ranks` > 1 ranks also
  // the gradient exchange's message buffers (at most micro-batches + 2 gradients).
  static std::size_t memory_bytes(const RunConfig& cfg, int ranks = 1);
  // The multiply-adds of training cfg from step `from` to cfg.train.steps: each step's batch of
  // rows, 3 forward passes each (the forward and the backward's two products) over the longest
  // training row (Model::forward_work).
  static double training_work(const RunConfig& cfg, std::size_t from = 0);
  // Throws ConfigError (train.steps, train.batch) naming the numbers when training_work(cfg,
  // from) shared among `ranks` ranks is past limits::train_work: the constructor and
  // set_total_steps refuse such a run before it starts, and the commands check it before
  // anything is written.
  static void check_training_work(const RunConfig& cfg, std::size_t from = 0, int ranks = 1);
  // A trainer restored from a checkpoint written by save(): parameters, AdamW state, step.
  // With several ranks, every rank reads path (collective; JobFailure on every rank when one
  // cannot, or when the ranks read different states).
  static Trainer load(const std::string& path, Communicator& comm = single_process());
  // A new run (step 0, a fresh optimizer) whose parameters start as the checkpoint's at path;
  // with table_path, the learned table is the one in that file (a position table file, or a
  // checkpoint resized by posemb::replace_position_table; reserved rows skipped) instead of the
  // checkpoint's. settings give the new run's task and training settings; its model settings
  // must be the checkpoint's (model.max_seq_len comes from the table, model.init_std and
  // embed_init_std are unused). The lineage (checkpoint, step, table and its provenance) is
  // kept in lineage() and in every checkpoint the run writes. Throws ConfigError naming the
  // fields for settings that do not fit the checkpoint (a table shorter than the new training
  // sequences included), std::invalid_argument for a table given to an encoding without one,
  // and the errors of read_checkpoint and load_position_table. With several ranks, collective
  // like load.
  static Trainer from_checkpoint(const std::string& path, const RunConfig& settings,
                                 const std::string& table_path = {},
                                 Communicator& comm = single_process());
  // The same with the checkpoint's own settings and the given overrides (lab::merge_run: task
  // and training settings; ConfigError naming a model field), the checkpoint read once.
  static Trainer from_checkpoint(const std::string& path, const RunOverrides& overrides,
                                 const std::string& table_path = {},
                                 Communicator& comm = single_process());
  // Where this run's weights came from ("" for a run initialized from its seed).
  const std::string& lineage() const { return lineage_; }

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
  // before any parameter changes, when the loss is NaN or infinite, and after the update when
  // it left a parameter or AdamW moment infinite or NaN (with several ranks JobFailure, on every
  // rank). After the latter the trainer refuses further steps and save() (std::logic_error), so
  // no checkpoint holds the broken parameters. Collective.
  double train_step();
  // Writes parameters, optimizer state, settings and step atomically (lab::write_checkpoint).
  // Collective: rank 0 writes; every rank throws JobFailure when the write fails. An I/O failure
  // (a full disk, the file-size limit) is a std::runtime_error naming the step and carrying the
  // writer's message (the file, what failed, the reason); the file is left as it was.
  void save(const std::string& path);

 private:
  // from_checkpoint with the new run's settings made from the checkpoint read.
  static Trainer from_checkpoint_with(const std::string& path,
                                      const std::function<RunConfig(const Checkpoint&)>& settings,
                                      const std::string& table_path, Communicator& comm);
  void verify_same_state(const char* what);
  std::uint64_t fingerprint();
  // The steps of train_step: the step's batch, the encoding's positions reserved and the row
  // order; micro-batch k (forward and backward into its own acts and gradients); the loss of
  // every rank's micro-batches; the summed gradients clipped and applied. The first two return
  // their exception (they run where nothing may throw out).
  std::exception_ptr make_batch();
  std::exception_ptr run_micro_batch(std::size_t k, double& loss);
  double exchanged_loss(std::span<const double> mine);
  // This rank's micro-batch gradients as the exchange's segments (one per tensor).
  std::vector<std::vector<std::span<const float>>> micro_batch_gradients();
  // The range of the summed gradient this rank holds, clipped and applied to the parameters
  // (AdamW over that range); the updated parameters shared by the ranks. Collective.
  void apply_gradients();
  // With several ranks, the learned table's rows this step trained (nonzero in the summed
  // gradient, of which each rank holds its range) found on any rank, made visible to
  // Encoding::zero_grad() on every rank. Collective.
  void share_trained_rows(std::span<const std::span<float>> grads);
  // After the optimizer's update of this rank's range: a non-finite parameter or moment there
  // (an overflowing update) sets failed_ and throws on every rank. Collective.
  void check_update();
  // Every rank's range of AdamW's moments to every rank (each step updates only this rank's),
  // before the moments are written or compared; nothing when they are whole. Collective.
  void share_moments();

  RunConfig cfg_;
  Communicator* comm_;
  Model model_;
  GradientExchange exchange_;
  std::vector<Activations> acts_;  // one per micro-batch of this rank
  std::vector<Gradients> grads_;   // one per micro-batch of this rank
  std::vector<double> losses_;     // (micro_batches) every micro-batch's, after a step
  AdamW opt_;
  bool failed_ = false;             // a step left non-finite parameters: no more steps, no save
  bool moments_shared_ = true;      // false: each rank's moments are current in its range only
  Batch batch_;                     // the step's batch (every rank makes all of it)
  std::vector<std::size_t> order_;  // its rows in micro-batch order (sorted by length or not)
  std::size_t step_ = 0;
  std::string lineage_;
};

}  // namespace posemb::lab
