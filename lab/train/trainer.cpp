// The trainer's steps (lab/train/trainer.hpp); its checkpoints are trainer_checkpoint.cpp's.
#include "lab/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

#include "lab/model/kernels.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/run.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {
namespace {

// cfg completed (what the task records of its data: a text's corpus identity) and checked.
const ModelConfig& validated(RunConfig& cfg, int ranks) {
  complete_task(cfg.task);
  validate_run(cfg);
  const auto& t = cfg.train;
  check_allocation("train (batch " + std::to_string(t.batch) + " in micro-batches of " +
                       std::to_string(std::min(t.micro_batch, t.batch)) + ", sequences of " +
                       std::to_string(run_train_tokens(cfg)) + " tokens, " +
                       std::to_string(cfg.model.n_layers) + " layers, d_model " +
                       std::to_string(cfg.model.d_model) + ", d_ff " +
                       std::to_string(cfg.model.d_ff) + ")",
                   Trainer::memory_bytes(cfg, ranks));
  Trainer::check_training_work(cfg, 0, ranks);  // the memory first, as before the work limit
  return cfg.model;
}

// The sizes of the pieces of one micro-batch gradient (the layout GradientExchange sums): one per
// tensor of model.tensors(), the optimizer's parameter order, so that element k of the flat
// gradient is element k of AdamW's parameters and of the norm's blocks.
std::vector<std::size_t> gradient_segments(Model& model) {
  std::vector<std::size_t> segs;
  for (const auto& t : model.tensors()) segs.push_back(t.grad.size());
  return segs;
}

// A tensor's elements, row by row (the model's tensors are contiguous).
std::span<float> flat(MatrixView<float> m) {
  if (m.rows() > 1 && m.row_stride() != m.cols()) {
    throw std::logic_error("train: a tensor of the model is not contiguous");
  }
  return {m.data(), m.size()};
}

std::size_t micro_batch_count(const TrainConfig& t) {
  const std::size_t mb = std::min(t.micro_batch, t.batch);
  return (t.batch + mb - 1) / mb;
}

// FNV-1a, 64 bits: enough to tell ranks that hold different states apart.
void fnv(std::uint64_t& h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
}

}  // namespace

// A function-try-block: whatever fails while building this rank's trainer is exchanged with the
// other ranks (Communicator::check), so that no rank is left waiting for one that threw.
Trainer::Trainer(const RunConfig& cfg, Communicator& comm) try
    : cfg_(cfg),
      comm_(&comm),
      model_(validated(cfg_, comm.size())),
      exchange_(comm, micro_batch_count(cfg_.train), gradient_segments(model_)),
      opt_(AdamWConfig{cfg_.train.lr, cfg_.train.beta1, cfg_.train.beta2, 1e-8f,
                       cfg_.train.weight_decay}) {
  model_.initialize(cfg_.train.seed);
  const std::size_t mb = std::min(cfg_.train.micro_batch, cfg_.train.batch);
  for (std::size_t k = 0; k < exchange_.mine().size(); ++k) {
    acts_.emplace_back(cfg_.model, mb, run_train_tokens(cfg_));
    grads_.push_back(model_.make_gradients());
  }
  losses_.resize(exchange_.micro_batches());
  comm.check(nullptr, "train: setting up");
  verify_same_state("train: setting up");
} catch (const JobFailure&) {
  throw;  // every rank knows already
} catch (const CommunicationError&) {
  throw;
} catch (...) {
  comm.check(std::current_exception(), "train: setting up");  // throws
}

double Trainer::training_work(const RunConfig& cfg, std::size_t from) {
  const std::size_t steps = cfg.train.steps > from ? cfg.train.steps - from : 0;
  return static_cast<double>(steps) * static_cast<double>(cfg.train.batch) * 3.0 *
         Model::forward_work(cfg.model, run_train_tokens(cfg));
}

void Trainer::check_training_work(const RunConfig& cfg, std::size_t from, int ranks) {
  const double work = training_work(cfg, from) / static_cast<double>(std::max(ranks, 1));
  if (limits::train_work.contains(work)) return;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.3g multiply-adds%s, more than the %.3g a run may take", work,
                ranks > 1 ? " on each rank" : "", limits::train_work.max);
  throw ConfigError(
      {"train.steps", "train.batch"},
      "train config: " + std::to_string(cfg.train.steps - std::min(from, cfg.train.steps)) +
          " steps of " + std::to_string(cfg.train.batch) + " rows of " +
          std::to_string(run_train_tokens(cfg)) + " tokens on this model (" +
          std::to_string(cfg.model.n_layers) + " layers, d_model " +
          std::to_string(cfg.model.d_model) + ") need about " + buf +
          " (weeks of computing): train fewer steps or smaller batches");
}

std::size_t Trainer::memory_bytes(const RunConfig& cfg, int ranks) {
  const auto& m = cfg.model;
  const std::size_t T = run_train_tokens(cfg);
  const std::size_t mb = std::min(cfg.train.micro_batch, cfg.train.batch);
  const std::size_t nm = (cfg.train.batch + mb - 1) / mb;
  // Positions a computed encoding caches: the training sequences' (randomized: the table's).
  const std::size_t positions = std::max(T, m.max_seq_len);
  const std::size_t model = Model::bytes(m, positions);
  // Per micro-batch: its gradients (laid out like the model's) and its activations; AdamW's two
  // moments are the size of the parameters; the batch (16 bytes a token) and its row order.
  std::size_t total = saturating_mul(2, model);
  total = saturating_add(total,
                         saturating_mul(nm, saturating_add(model, Activations::bytes(m, mb, T))));
  if (ranks > 1) {
    // GradientExchange's message buffers (lab/ranks/gradient_exchange.hpp): this rank's gradients
    // outside its range, the other micro-batches' parts inside it, its range and one whole
    // gradient, at most nm + 2 gradients of G floats. Shared memory needs less (its own block).
    std::size_t elements = 0;
    for (const auto& p : Model::tensor_shapes(m)) {
      elements = saturating_add(elements, saturating_mul(p.rows, p.cols));
    }
    total = saturating_add(total, saturating_mul(saturating_mul(nm + 2, elements), sizeof(float)));
  }
  return saturating_add(
      total,
      saturating_mul(cfg.train.batch, saturating_add(saturating_mul(T, 16), sizeof(std::size_t))));
}

float Trainer::lr_at(std::size_t s) const {
  const auto& t = cfg_.train;
  if (s < t.warmup) {
    return t.lr * static_cast<float>(s + 1) / static_cast<float>(t.warmup);
  }
  const double span = static_cast<double>(std::max<std::size_t>(t.steps - t.warmup, 1));
  const double progress = std::min(1.0, static_cast<double>(s - t.warmup) / span);
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  return static_cast<float>(t.lr * (t.min_lr_ratio + (1.0 - t.min_lr_ratio) * cosine));
}

void Trainer::set_total_steps(std::size_t steps) {
  RunConfig c = cfg_;
  c.train.steps = steps;
  c.train.validate();
  check_training_work(c, std::min(step_, steps), comm_->size());
  cfg_.train.steps = steps;
}

std::exception_ptr Trainer::make_batch() {
  try {
    // Every rank makes the whole batch (cheap, a function of seed and step) and computes its own
    // micro-batches of it.
    const std::size_t B = cfg_.train.batch;
    find_task(cfg_.task.kind)
        .train_batch(batch_, cfg_.task, B, cfg_.train.seed, step_,
                     model_.encoding_spec().train_positions, cfg_.model.max_seq_len);
    // The one change to the model's encoding, before the micro-batches run concurrently.
    std::int64_t top = 0;
    for (auto p : batch_.positions.flat()) top = std::max(top, p);
    model_.reserve_positions(static_cast<std::size_t>(top) + 1);
    // With sort_by_length, micro-batches take the rows in order of n (stable), so that each is
    // only as long as its own longest sequence: the same gradient (padding contributes
    // nothing), less work. The rows are read in place (Model::forward copies them once).
    order_.resize(B);
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    if (cfg_.train.sort_by_length) {
      std::stable_sort(order_.begin(), order_.end(), [&](std::size_t x, std::size_t y) {
        return batch_.row_tokens[x] < batch_.row_tokens[y];
      });
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

std::exception_ptr Trainer::run_micro_batch(std::size_t k, double& loss) {
  const std::size_t B = cfg_.train.batch, mb = std::min(cfg_.train.micro_batch, B);
  const std::size_t r0 = exchange_.mine()[k] * mb, rows = std::min(mb, B - r0);
  const std::span<const std::size_t> mine(order_.data() + r0, rows);
  std::size_t T = batch_.tokens.cols();
  if (cfg_.train.sort_by_length) {
    T = 0;
    for (const std::size_t b : mine) T = std::max(T, batch_.row_tokens[b]);
  }
  try {
    loss = model_.forward(acts_[k], batch_.tokens.cview().subcols(0, T),
                          batch_.positions.cview().subcols(0, T),
                          batch_.targets.cview().subcols(0, T), mine, batch_.counted);
    auto& g = grads_[k];
    std::fill(g.arena.flat().begin(), g.arena.flat().end(), 0.0f);
    for (auto& e : g.encoding) std::fill(e.flat().begin(), e.flat().end(), 0.0f);
    model_.backward(acts_[k], &g);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

double Trainer::exchanged_loss(std::span<const double> mine) {
  exchange_.gather(mine, losses_);
  double loss = 0.0;
  for (double l : losses_) loss += l;
  if (!std::isfinite(loss)) {
    const std::string msg = "train: the loss is " + std::to_string(loss) + " at step " +
                            std::to_string(step_ + 1) +
                            "; training stopped before updating the parameters (try a lower lr)";
    // Every rank computed the same loss, so every rank throws here.
    if (comm_->size() > 1) throw JobFailure(msg);
    throw std::runtime_error(msg);
  }
  return loss;
}

std::vector<std::vector<std::span<const float>>> Trainer::micro_batch_gradients() {
  // Each tensor's gradient inside each micro-batch's buffers, in model_.tensors()'s order: the
  // model's own tensors at their offset in the arena, the encoding's in order.
  const std::span<float> arena = model_.params().grad_arena();
  const auto tensors = model_.tensors();
  std::vector<std::vector<std::span<const float>>> parts(grads_.size());
  for (std::size_t k = 0; k < grads_.size(); ++k) {
    std::size_t enc = 0;
    for (const auto& t : tensors) {
      const float* g = t.grad.data();
      if (g >= arena.data() && g < arena.data() + arena.size()) {
        parts[k].emplace_back(grads_[k].arena.data() + (g - arena.data()), t.grad.size());
      } else {
        parts[k].emplace_back(grads_[k].encoding.at(enc++).data(), t.grad.size());
      }
    }
  }
  return parts;
}

void Trainer::apply_gradients() {
  std::vector<std::span<float>> grads, values;
  for (const auto& t : model_.tensors()) {
    grads.push_back(flat(t.grad));
    values.push_back(flat(t.value));
  }
  // This rank's range of the sum of the micro-batch gradients, in micro-batch order (the whole
  // sum on one process; the same bits either way).
  exchange_.reduce(micro_batch_gradients(), grads);
  if (cfg_.train.grad_clip > 0.0f) {
    // The norm of the whole sum: the same bits on any number of ranks and threads.
    const double norm = std::sqrt(exchange_.sum_of_squares(grads));
    if (norm > cfg_.train.grad_clip) {
      const auto scale = static_cast<float>(cfg_.train.grad_clip / norm);
      for (const auto& piece : exchange_.pieces(grads)) {
        const std::size_t n = piece.data.size();
        parallel_for(n, std::size_t{1} << 14, streaming_work(2 * n * sizeof(float)),
                     [&](std::size_t begin, std::size_t end) {
                       for (std::size_t k = begin; k < end; ++k) piece.data[k] *= scale;
                     });
      }
    }
  }
  // AdamW on this rank's range only; then every rank's updated parameters to every rank.
  opt_.config().lr = lr_at(step_);
  const auto refs = model_.param_refs();
  const auto range = exchange_.range();
  opt_.step(refs, range.begin, range.end);
  check_update();
  if (comm_->size() > 1) {
    moments_shared_ = false;
    share_trained_rows(grads);
  }
  exchange_.share(values);
  // The learned table records the rows this step trained.
  model_.encoding().zero_grad();
}

void Trainer::check_update() {
  // A finite loss does not make a finite update: lr times the weight decay, or a step of a huge
  // gradient, can overflow float and leave infinite or NaN parameters (or moments). Each rank
  // checks its range (what it just updated); every rank then stops together, before the next
  // forward, the parameters' exchange or any checkpoint can spread them.
  std::exception_ptr bad;
  const auto tensors = model_.tensors();
  std::vector<std::span<float>> values, first, second;
  for (const auto& t : tensors) values.push_back(flat(t.value));
  for (auto& m : opt_.first_moments()) first.push_back(m.flat());
  for (auto& m : opt_.second_moments()) second.push_back(m.flat());
  const std::pair<const char*, std::vector<std::span<float>>*> kinds[] = {
      {"parameter", &values},
      {"AdamW first moment of", &first},
      {"AdamW second moment of", &second}};
  for (const auto& [what, segs] : kinds) {
    if (bad) break;
    for (const auto& piece : exchange_.pieces(*segs)) {
      if (all_finite(piece.data)) continue;
      std::ostringstream msg;
      msg << "train: the update of step " << step_ + 1 << " made the " << what << " '"
          << tensors.at(piece.segment).name << "' infinite or NaN, although the step's loss was "
          << "finite (lr " << opt_.config().lr << " at this step, weight_decay "
          << opt_.config().weight_decay << "): float overflowed; training stopped, and these "
          << "parameters are not saved (try a lower lr or weight decay)";
      bad = std::make_exception_ptr(std::runtime_error(msg.str()));
      break;
    }
  }
  try {
    comm_->check(bad, "train: step " + std::to_string(step_ + 1));
  } catch (...) {
    failed_ = true;
    throw;
  }
}

void Trainer::share_trained_rows(std::span<const std::span<float>> grads) {
  if (model_.encoding().learned_table() == nullptr) return;
  const auto tensors = model_.tensors();
  std::size_t table = 0;
  while (tensors.at(table).name != model_.encoding_spec().table_tensor) ++table;
  const MatrixView<float> g = tensors[table].grad;
  // Rows with a nonzero element in this rank's range of the (clipped) sum, then on any rank.
  std::vector<std::uint8_t> found(g.rows(), 0);
  for (const auto& piece : exchange_.pieces(grads)) {
    if (piece.segment != table) continue;
    for (std::size_t k = 0; k < piece.data.size(); ++k) {
      if (piece.data[k] != 0.0f) found[(piece.offset + k) / g.cols()] = 1;
    }
  }
  const auto n = static_cast<std::size_t>(comm_->size());
  std::vector<std::uint8_t> all(n * g.rows());
  const std::vector<std::size_t> counts(n, g.rows());
  comm_->allgatherv(std::span<const std::uint8_t>(found), std::span<std::uint8_t>(all), counts);
  // The gradient is cleared next (zero_grad()): one nonzero element marks a row some rank found.
  for (std::size_t r = 0; r < g.rows(); ++r) {
    bool any = false;
    for (std::size_t q = 0; q < n; ++q) any = any || all[q * g.rows() + r] != 0;
    std::fill(g.row(r).begin(), g.row(r).end(), 0.0f);
    if (any) g(r, 0) = 1.0f;
  }
}

void Trainer::share_moments() {
  if (moments_shared_) return;
  for (auto* moments : {&opt_.first_moments(), &opt_.second_moments()}) {
    std::vector<std::span<float>> segs;
    for (auto& m : *moments) segs.emplace_back(m.data(), m.size());
    exchange_.share(segs);
  }
  moments_shared_ = true;
}

double Trainer::train_step() {
  if (failed_) {
    throw std::logic_error("Trainer::train_step: step " + std::to_string(step_ + 1) +
                           " left infinite or NaN parameters; this trainer cannot go on");
  }
  const std::size_t n = exchange_.mine().size();
  // errors[k]: micro-batch k's; errors[n]: the batch's. Nothing may leave a parallel task.
  std::vector<std::exception_ptr> errors(n + 1);
  errors[n] = make_batch();
  std::vector<double> my_losses(n);
  if (!errors[n]) {
    // This rank's micro-batches concurrently (the kernels inside each run on its thread), the
    // last (with sort_by_length the longest) first; each into its own acts and gradients.
    parallel_tasks(n, 0, [&](std::size_t i) {
      const std::size_t k = n - 1 - i;
      errors[k] = run_micro_batch(k, my_losses[k]);
    });
  }
  std::exception_ptr first;
  for (const auto& e : errors) {
    if (e && !first) first = e;
  }
  // Every rank learns whether any failed before the exchange (one process: rethrows).
  comm_->check(first, "train: step " + std::to_string(step_ + 1));
  const double loss = exchanged_loss(my_losses);
  apply_gradients();
  ++step_;
  return loss;
}

std::uint64_t Trainer::fingerprint() {
  share_moments();
  std::uint64_t h = 14695981039346656037ull;
  const std::string settings = cfg_.to_json();
  fnv(h, settings.data(), settings.size());
  const std::uint64_t counts[] = {step_, static_cast<std::uint64_t>(opt_.steps())};
  fnv(h, counts, sizeof counts);
  for (const auto& s : model_.tensors()) {
    for (std::size_t r = 0; r < s.value.rows(); ++r) {
      fnv(h, s.value.row(r).data(), s.value.cols() * sizeof(float));
    }
  }
  for (const auto* moments : {&opt_.first_moments(), &opt_.second_moments()}) {
    for (const auto& m : *moments) fnv(h, m.data(), m.size() * sizeof(float));
  }
  return h;
}

void Trainer::verify_same_state(const char* what) {
  if (comm_->size() == 1) return;
  const auto prints = comm_->allgather(fingerprint());
  std::string differ;
  for (std::size_t r = 1; r < prints.size(); ++r) {
    if (prints[r] != prints[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!differ.empty()) {
    throw JobFailure(std::string(what) + ": the ranks do not hold the same model: rank(s) " +
                     differ + " of " + std::to_string(comm_->size()) +
                     " differ from rank 0 (different settings, seed or checkpoint); every "
                     "rank must be given the same ones");
  }
}

}  // namespace posemb::lab
