// lab/train/preflight.hpp: what a command checks before it starts the work, so that a run is
// refused up front instead of failing after hours (the ranks' agreement is
// lab/ranks/agreement.hpp's):
//
//   lab::check_resume_step(tr.step(), cfg.train.steps);            // a resume past --steps
//   lab::check_checkpoint_metadata(cfg.to_json(), tr.lineage());   // the final write will fit
//   lab::check_thread_budget(threads, "sweep --parallel-runs");    // threads under ulimit -v
//
// Each throws with one line naming the numbers and what to change; nothing has been trained or
// written when they throw.
#pragma once

#include <cstddef>
#include <string_view>

namespace posemb::lab {

// The largest lineage (the run's history of tables and checkpoints) a checkpoint may hold:
// read_checkpoint refuses more.
inline constexpr std::size_t kMaxLineageBytes = std::size_t{64} << 10;

// Throws ConfigError (field train.steps) when a resumed run's step is past its total steps:
// nothing would be trained and the checkpoint written would claim a step past the schedule.
void check_resume_step(std::size_t step, std::size_t total_steps);

// Throws std::runtime_error when the checkpoint the run will write could not be written or read
// back: a lineage over kMaxLineageBytes, or metadata (the settings, and the lineage twice: the
// lab's key and the table's provenance) over the safetensors metadata limit.
void check_checkpoint_metadata(std::string_view run_json, std::string_view lineage);

// Throws std::runtime_error when `threads` threads (more than one), each with a stack and a
// malloc arena, do not fit the address-space limit (ulimit -v / prlimit --as) beside the memory
// in use. No limit: nothing to check.
void check_thread_budget(std::size_t threads, std::string_view what);
// The same against a given limit and memory in use (bytes): the rule alone, for tests.
void check_thread_budget(std::size_t threads, std::string_view what, std::size_t limit,
                         std::size_t in_use);

}  // namespace posemb::lab
