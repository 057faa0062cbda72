#include "lab/experiment/sweep.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/experiment/grid.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {
namespace {

// One point of the grid: the values at index i of each axis (the odometer of make_grid).
struct Point {
  std::string task, corpus, pe;
  std::size_t alphabet, train_len, d_model, layers, heads, batch, steps;
  float lr;
  std::uint64_t seed;
};

// The scalings of a.rope_scaling x a.rope_factor ("none" once), checked to go together.
std::vector<RopeScalingConfig> eval_scalings(const SweepAxes& a) {
  const auto& methods = rope_scaling_methods();
  std::vector<RopeScalingConfig> out;
  bool factor_used = false;
  for (const auto& m : a.rope_scaling) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) {
      throw ConfigError({"model.rope_scaling"},
                        "sweep: rope scaling " + quote_untrusted(m, 64) + " is not a method");
    }
    if (m == methods.front()) {
      out.push_back(RopeScalingConfig{});
      continue;
    }
    if (a.rope_factor.empty()) {
      throw ConfigError({"model.rope_factor"},
                        "sweep: rope scaling " + m + " needs a factor (e.g. 2)");
    }
    factor_used = true;
    for (const double f : a.rope_factor) out.push_back(RopeScalingConfig{m, f, 0});
  }
  if (!a.rope_factor.empty() && !factor_used) {
    throw ConfigError({"model.rope_factor"},
                      a.rope_scaling.empty()
                          ? "sweep: a rope factor needs a rope scaling method"
                          : "sweep: a rope factor is not used with rope scaling none alone");
  }
  return out;
}

// A corpus as the runs' names show it: its file name, "default" for the default corpus.
std::string corpus_label(const std::string& corpus) {
  return corpus.empty() ? std::string("default")
                        : std::filesystem::path(corpus).filename().string();
}

// `scalings`: eval_scalings(a), given to every run of an encoding that rotates q and k.
SweepPoint make_point(const RunChoices& base, const SweepAxes& a, const Point& v,
                      const std::vector<RopeScalingConfig>& scalings) {
  RunChoices c = base;
  c.task = v.task;
  c.run.task.corpus = v.corpus;
  c.pe = v.pe;
  c.run.task.alphabet = v.alphabet;
  c.run.task.train_len = v.train_len;
  c.run.model.d_model = v.d_model;
  c.run.model.n_layers = v.layers;
  c.run.model.n_heads = v.heads;
  c.run.train.batch = v.batch;
  c.run.train.steps = v.steps;
  c.run.train.lr = v.lr;
  c.run.train.seed = v.seed;
  if (!find_encoding(v.pe).has_table) c.max_seq_len = 0;  // sizes only the tables there are
  if (!find_encoding(v.pe).has_relative_buckets()) c.relative_bias = {};  // likewise the buckets
  SweepPoint p;
  p.task = v.task;
  p.seed = v.seed;
  p.run.run = complete_run(c);
  p.run.eval = lengths_up_to(p.run.run.task, a.eval_max);
  p.run.eval.samples = a.samples;
  p.run.eval.seed = a.eval_seed;
  if (find_encoding(v.pe).site == EncodingSite::attention) {
    p.run.eval_scalings = scalings;
    for (const auto& s : p.run.eval_scalings) validate_model(scaled_model(p.run.run, s));
  }
  std::string group;
  auto axis = [&](const char* name, std::size_t values, const auto& value) {
    if (values < 2) return;
    if (!group.empty()) group += ' ';
    group += fmt::format("{}={}", name, value);
  };
  axis("task", a.task.size(), v.task);
  axis("corpus", a.corpus.size(), corpus_label(v.corpus));
  axis("alphabet", a.alphabet.size(), v.alphabet);
  axis("train_len", a.train_len.size(), v.train_len);
  axis("d_model", a.d_model.size(), v.d_model);
  axis("layers", a.layers.size(), v.layers);
  axis("heads", a.heads.size(), v.heads);
  axis("batch", a.batch.size(), v.batch);
  axis("steps", a.steps.size(), v.steps);
  axis("lr", a.lr.size(), v.lr);
  p.group = group;
  p.run.name =
      (group.empty() ? "" : group + " ") + "pe=" + v.pe + " seed=" + std::to_string(v.seed);
  return p;
}

// The number of runs of the grid: every axis has a value, and there are at most kMaxSweepRuns.
std::size_t grid_size(const SweepAxes& a, const std::vector<std::uint64_t>& seeds) {
  const std::pair<const char*, std::size_t> sizes[] = {{"task", a.task.size()},
                                                       {"corpus", a.corpus.size()},
                                                       {"alphabet", a.alphabet.size()},
                                                       {"train_len", a.train_len.size()},
                                                       {"d_model", a.d_model.size()},
                                                       {"layers", a.layers.size()},
                                                       {"heads", a.heads.size()},
                                                       {"batch", a.batch.size()},
                                                       {"steps", a.steps.size()},
                                                       {"lr", a.lr.size()},
                                                       {"pe", a.pe.size()},
                                                       {"seed", seeds.size()}};
  std::size_t total = 1;
  bool overflow = false;
  std::string product;  // "2 lr x 100000 seed"
  for (const auto& [name, n] : sizes) {
    if (n == 0) {
      throw ConfigError({"sweep.runs"},
                        std::string("sweep: the grid's ") + name + " has no values");
    }
    overflow = overflow || total > SIZE_MAX / n;
    total = overflow ? total : total * n;
    if (n > 1) product += fmt::format("{}{} {}", product.empty() ? "" : " x ", n, name);
  }
  if (overflow || total > kMaxSweepRuns) {
    throw ConfigError({"sweep.runs"},
                      fmt::format("sweep: the grid has {} runs ({}), more than {}",
                                  overflow ? std::string("too many") : std::to_string(total),
                                  product, kMaxSweepRuns));
  }
  return total;
}

// No axis lists a value twice: that would train the same runs twice under the same name.
void check_each_once(const SweepAxes& a, const std::vector<std::uint64_t>& seeds) {
  auto once = [](const char* field, const char* name, const auto& values) {
    auto sorted = values;
    // NaN (refused with its run below) sorts last, so that the order stays a strict weak one.
    std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
      if constexpr (std::is_floating_point_v<std::decay_t<decltype(x)>>) {
        return !std::isnan(x) && (std::isnan(y) || x < y);
      } else {
        return x < y;
      }
    });
    const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
    if (twice != sorted.end()) {
      throw ConfigError({field}, fmt::format("sweep: the grid's {} lists {} twice", name, *twice));
    }
  };
  once("task.kind", "task", a.task);
  once("task.corpus", "corpus", a.corpus);
  once("task.alphabet", "alphabet", a.alphabet);
  once("task.train_len", "train_len", a.train_len);
  once("model.d_model", "d_model", a.d_model);
  once("model.n_layers", "layers", a.layers);
  once("model.n_heads", "heads", a.heads);
  once("train.batch", "batch", a.batch);
  once("train.steps", "steps", a.steps);
  once("train.lr", "lr", a.lr);
  once("model.pe", "pe", a.pe);
  once("train.seed", "seed", seeds);
  once("model.rope_scaling", "rope_scaling", a.rope_scaling);
  once("model.rope_factor", "rope_factor", a.rope_factor);
}

// The corpora of task's runs: the grid's for a task that reads one, none ("") otherwise.
std::vector<std::string> task_corpora(const SweepAxes& a, const std::string& task) {
  if (find_task(task).complete != nullptr) return a.corpus;
  return {""};
}

// Corpora named for a grid none of whose tasks reads one: refused rather than ignored.
void check_corpora(const SweepAxes& a) {
  if (a.corpus == std::vector<std::string>{""}) return;
  for (const auto& t : a.task) {
    if (find_task(t).complete != nullptr) return;
  }
  throw ConfigError({"task.corpus", "task.kind"},
                    "sweep: corpora are for a task that reads one, and none of the grid's tasks "
                    "does");
}

}  // namespace

std::vector<SweepPoint> make_grid(const RunChoices& base, const SweepAxes& a,
                                  const std::vector<std::uint64_t>& seeds) {
  const std::size_t total = grid_size(a, seeds);
  check_each_once(a, seeds);
  const std::vector<RopeScalingConfig> scalings = eval_scalings(a);  // errors before any run's
  if (!a.rope_scaling.empty() && std::none_of(a.pe.begin(), a.pe.end(), [](const auto& pe) {
        return find_encoding(pe).site == EncodingSite::attention;
      })) {
    throw ConfigError({"model.rope_scaling", "model.pe"},
                      "sweep: rope scalings stretch the rotation of q and k, and none of the "
                      "grid's encodings rotates them");
  }
  check_corpora(a);
  std::vector<SweepPoint> grid;
  grid.reserve(total);
  Point v{};
  for (const auto& task : a.task)
    for (const auto& corpus : task_corpora(a, task))
      for (const auto alphabet : a.alphabet)
        for (const auto train_len : a.train_len)
          for (const auto d_model : a.d_model)
            for (const auto layers : a.layers)
              for (const auto heads : a.heads)
                for (const auto batch : a.batch)
                  for (const auto steps : a.steps)
                    for (const auto lr : a.lr)
                      for (const auto& pe : a.pe)
                        for (const auto seed : seeds) {
                          v = {task,   corpus, pe,    alphabet, train_len, d_model,
                               layers, heads,  batch, steps,    lr,        seed};
                          grid.push_back(make_point(base, a, v, scalings));
                        }
  return grid;
}

std::pair<std::vector<SweepPoint>, std::vector<GridOutcome>> expand_rope_scalings(
    const std::vector<SweepPoint>& points, const std::vector<GridOutcome>& outcomes) {
  std::pair<std::vector<SweepPoint>, std::vector<GridOutcome>> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& scalings = points[i].run.eval_scalings;
    if (scalings.empty() || !outcomes[i].error.empty() ||
        outcomes[i].scaled.size() != scalings.size()) {
      out.first.push_back(points[i]);
      out.second.push_back(outcomes[i]);
      continue;
    }
    for (std::size_t k = 0; k < scalings.size(); ++k) {
      const auto& s = scalings[k];
      SweepPoint p = points[i];
      p.rope_scaling = s.method == rope_scaling_methods().front()
                           ? s.method
                           : fmt::format("{} x{}", s.method, s.factor);
      p.run.name += " rope_scaling=" + p.rope_scaling;
      GridOutcome o = outcomes[i];
      o.results.results = outcomes[i].scaled[k];
      out.first.push_back(std::move(p));
      out.second.push_back(std::move(o));
    }
  }
  return out;
}
}  // namespace posemb::lab
