// lab/experiment/sweep.hpp: the grid of a sweep: each setting a list of values, the runs every
// combination of them, seed innermost, each a complete, validated run.
//
//   lab::RunChoices base;                       // the settings every run shares
//   lab::SweepAxes axes;
//   axes.pe = {"learned", "rope"};
//   axes.train_len = {8, 16};
//   std::vector<lab::SweepPoint> grid = lab::make_grid(base, axes, {1, 2, 3});   // 12 runs
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/tasks/registry.hpp"

namespace posemb::lab {

// The axes of the grid (each a list of values) and the evaluation of every run.
struct SweepAxes {
  std::vector<std::string> pe{default_encoding_name()}, task{default_task_name()};
  std::vector<std::size_t> alphabet{8}, train_len{16}, d_model{64}, layers{2}, heads{4}, batch{32},
      steps{1000};
  std::vector<float> lr{1e-3f};
  // Corpora of the tasks that read one (the text task; "": the default corpus). The other tasks'
  // runs take none, whatever this lists.
  std::vector<std::string> corpus{""};
  // 0: 3 * train_len of each run; a task scored on the windows of a text is evaluated at
  // train_len, 2 train_len, 4 train_len, ... up to eval_max (default 4 train_len)
  std::size_t eval_max = 0;
  std::size_t samples = 100;
  std::uint64_t eval_seed = 1234;
  // RoPE scalings each run of an encoding that rotates q and k (rope) is also evaluated with,
  // zero-shot after training, once per method and factor ("none" once, without a factor):
  // GridRun::eval_scalings. Not axes: no run is added. Empty: none.
  std::vector<std::string> rope_scaling;
  std::vector<double> rope_factor;
};

// One run of the grid and the values of the grid's axes it was made from.
struct SweepPoint {
  GridRun run;
  std::string task;
  std::uint64_t seed = 0;
  std::string group;  // the axes other than pe and seed that vary, "task=copy train_len=8"; or ""
  // "none", "yarn x4": a zero-shot evaluation with this RoPE scaling (expand_rope_scalings);
  // "" for a run's own evaluation.
  std::string rope_scaling;
};

// A run evaluated with RoPE scalings (GridRun::eval_scalings) as one entry per scaling, in
// their order: the point named "<name> rope_scaling=yarn x4" with rope_scaling set, the
// outcome with that evaluation as its results (a failed run stays one entry). Every other run
// as it is. The files, charts and summary then list each as a run of its own.
std::pair<std::vector<SweepPoint>, std::vector<GridOutcome>> expand_rope_scalings(
    const std::vector<SweepPoint>& points, const std::vector<GridOutcome>& outcomes);

// The most runs one grid may have.
inline constexpr std::size_t kMaxSweepRuns = 100000;

// The grid, in a fixed order: task, corpus, alphabet, train_len, d_model, layers, heads, batch,
// steps, lr, pe, then seed innermost (a task without a corpus once, whatever the corpora). Each run
// is complete_run(base with the point's values); an encoding without a table ignores
// base.max_seq_len, one without relative-position buckets base.relative_bias. A run's group names
// the axes (other than pe and seed) with more than one value, its name adds pe and seed. Throws
// ConfigError naming the fields of the first run that is not valid, the field of an axis that lists
// a value twice (the same runs twice), or (field "sweep.runs") when there would be more than
// kMaxSweepRuns runs or an axis is empty; fields model.rope_scaling / model.rope_factor for
// scalings that do not go together (a method but no factor, a factor but no method, none of the
// encodings rotating, a factor out of range).
std::vector<SweepPoint> make_grid(const RunChoices& base, const SweepAxes& axes,
                                  const std::vector<std::uint64_t>& seeds);

}  // namespace posemb::lab
