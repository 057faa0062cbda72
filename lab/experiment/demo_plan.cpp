// The demo's plan: its presets, every run's settings and the checks made before any training.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "lab/encodings/registry.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/experiment/demo_plan.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "posemb/memory.hpp"

namespace posemb::lab {
namespace {

// The task's preset (lab/tasks/: each task's file says how its budget was measured), or its
// quick one.
DemoPreset preset(const DemoOptions& o) {
  const TaskSpec& task = find_task(o.task);
  return o.quick ? task.quick : task.demo;
}

std::size_t or_default(std::size_t given, std::size_t preset) {
  return given != 0 ? given : preset;
}

// The encoding whose table the demo extends: a table trained at positions 0..len-1.
bool extended_encoding(const EncodingSpec& e) {
  return e.has_table && e.train_positions == PositionMode::contiguous;
}

// The encoding whose rotation a RoPE scaling stretches: the one that rotates q and k.
bool rotary_encoding(const EncodingSpec& e) {
  return e.in_demo && e.site == EncodingSite::attention;
}

// A task scored teacher-forced on the windows of a text: the text demo.
bool language_task(const std::string& task) {
  const TaskSpec& t = find_task(task);
  return t.windows != nullptr && t.scoring == Scoring::teacher_forced;
}

// The RoPE scaling the text demo leaves out (the library's name).
constexpr const char* kDynamicNtk = "dynamic";

}  // namespace

DemoPlan plan_demo(const DemoOptions& o) {
  if (o.seeds == 0) throw ConfigError({"demo.seeds"}, "demo: seeds is 0 (need at least 1)");
  if (o.seed > UINT64_MAX - (o.seeds - 1)) {
    throw ConfigError({"demo.seed", "demo.seeds"},
                      fmt::format("demo: {} seeds from {} pass 2^64 - 1 (the largest seed); give a "
                                  "smaller first seed",
                                  o.seeds, o.seed));
  }
  const DemoPreset p = preset(o);
  DemoPlan plan;
  plan.options = o;
  plan.train_len = p.train_len;
  plan.steps = or_default(o.steps, p.steps);
  plan.randomized_steps = or_default(o.randomized_steps, p.randomized_steps);
  plan.randomized_rows = p.randomized_rows;
  plan.extension_steps = or_default(o.extension_steps, p.extension_steps);
  plan.probe_every = std::max<std::size_t>(1, plan.extension_steps / 10);
  plan.preset = p;
  plan.language = language_task(o.task);
  for (const auto* e : encodings()) {
    if (e->in_demo || (p.trained_bias && e->trained_bias())) plan.encodings.emplace_back(e->name);
  }
  plan.extended = std::string(find_encoding_if(extended_encoding)->name);
  plan.methods = {ResizeMethod::copy, ResizeMethod::interpolate, ResizeMethod::random};
  if (!plan.language) plan.methods.push_back(ResizeMethod::sinusoidal);
  plan.eval.min_len = 1;
  plan.eval.max_len = or_default(o.eval_max, p.eval_max);
  plan.eval.samples = or_default(o.samples, p.samples);
  plan.eval.seed = 1000 + o.seed;
  if (plan.language) {
    // Bits per byte at L, 2L, 4L, ... up to eval_max, on the same bytes at every length.
    TaskConfig t;
    t.kind = o.task;
    t.train_len = plan.train_len;
    plan.eval.lengths = lengths_up_to(t, plan.eval.max_len).lengths;
    plan.eval.min_len = plan.eval.lengths.front();
    plan.eval.max_len = plan.eval.lengths.back();
    plan.eval.text_bytes = p.eval_bytes;
  }
  if (const EncodingSpec* rotary = find_encoding_if(rotary_encoding)) {
    plan.rotary = std::string(rotary->name);
    plan.rope_methods = rope_scaling_methods();
    plan.rope_factors = {plan.rope_factor};
    if (plan.language) {
      // Dynamic NTK at one fixed length is NTK at the factor that length gives: left out.
      std::erase(plan.rope_methods, kDynamicNtk);
      plan.rope_factors = {2.0, 4.0};
    }
    plan.rope_extension_steps = or_default(o.rope_extension_steps, p.rope_extension_steps);
    plan.rope_probe_every = std::min(p.rope_probe_every, plan.rope_extension_steps);
  }
  return plan;
}

RunConfig DemoPlan::run(const std::string& pe, std::uint64_t seed) const {
  RunConfig r;
  const TaskSpec& task = find_task(options.task);
  r.task.kind = options.task;
  r.task.alphabet = 8;
  r.task.train_len = train_len;
  r.task.corpus = options.corpus;
  r.model.pe = pe;
  r.model.vocab_size = task.vocab_size(r.task);
  r.model.d_model = preset.d_model;
  r.model.n_layers = preset.n_layers;
  r.model.n_heads = preset.n_heads;
  r.model.d_ff = preset.d_ff;
  const auto& spec = find_encoding(pe);
  const bool randomized = spec.train_positions == PositionMode::randomized;
  r.model.max_seq_len =
      randomized ? randomized_rows : spec.default_table_rows(task.tokens(r.task.train_len));
  r.model.relative_bias = spec.relative_bias_for(task.tokens(r.task.train_len));
  r.model.embed_init_std = spec.default_embed_init_std;
  r.train.batch = preset.batch;
  r.train.steps = randomized ? randomized_steps : steps;
  r.train.lr = preset.lr;
  r.train.warmup = std::min<std::size_t>(100, r.train.steps / 4);
  r.train.seed = seed;
  return r;
}

RunConfig DemoPlan::extension_run(std::uint64_t seed) const {
  RunConfig r = run(extended, seed);
  r.task.train_len = 2 * train_len;
  r.model.max_seq_len = find_task(options.task).tokens(2 * train_len);
  r.train.steps = extension_steps;
  r.train.warmup = std::min<std::size_t>(20, extension_steps / 4);
  return r;
}

RunConfig DemoPlan::rope_extension_run(std::uint64_t seed, const std::string& method,
                                       double factor) const {
  const RunConfig trained = run(rotary, seed);
  RunConfig r = trained;
  r.task.train_len = static_cast<std::size_t>(factor) * train_len;
  r.model.rope_scaling = rope_scaling_for(trained, method, factor);
  r.train.steps = rope_extension_steps;
  r.train.warmup = std::min<std::size_t>(20, rope_extension_steps / 4);
  return r;
}

void check_demo(const DemoPlan& plan) {
  for (const auto& pe : plan.encodings) {
    const RunConfig cfg = plan.run(pe, plan.options.seed);
    check_evaluation(cfg.model, cfg.task, plan.eval);
    Trainer::check_training_work(cfg);
    check_allocation("demo (" + pe + ")", Trainer::memory_bytes(cfg));
  }
  check_allocation("demo (extended table)",
                   Trainer::memory_bytes(plan.extension_run(plan.options.seed)));
  for (const double f : plan.rope_factors) {
    for (const auto& m : plan.rope_methods) {
      const RunConfig r = plan.rope_extension_run(plan.options.seed, m, f);
      validate_run(r);
      Trainer::check_training_work(r);
      check_allocation("demo (" + plan.rotary + " " + m + ")", Trainer::memory_bytes(r));
    }
  }
  // The runs together (each seed: every encoding, the table's extensions, the RoPE scalings).
  double work = 0.0;
  std::size_t runs = 0;
  for (std::uint64_t k = 0; k < plan.options.seeds; ++k) {
    const std::uint64_t seed = plan.options.seed + k;
    for (const auto& pe : plan.encodings) work += Trainer::training_work(plan.run(pe, seed));
    work +=
        static_cast<double>(plan.methods.size()) * Trainer::training_work(plan.extension_run(seed));
    for (const double f : plan.rope_factors) {
      for (const auto& m : plan.rope_methods) {
        work += Trainer::training_work(plan.rope_extension_run(seed, m, f));
      }
    }
    runs += plan.encodings.size() + plan.methods.size() +
            plan.rope_factors.size() * plan.rope_methods.size();
  }
  if (limits::train_work.contains(work)) return;
  throw ConfigError(
      {"demo.steps", "demo.randomized_steps", "demo.extension_steps", "demo.rope_extension_steps"},
      fmt::format(
          "demo: its {} training runs need about {:.3g} multiply-adds, more than the {:.3g} "
          "they may take together (weeks of computing): give fewer steps",
          runs, work, limits::train_work.max));
}

}  // namespace posemb::lab
