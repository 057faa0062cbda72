// lab/preflight.hpp: what a command checks before it starts the work, so that a run is refused
// up front instead of failing after hours (or on one rank only):
//
//   lab::check_resume_step(tr.step(), cfg.train.steps);            // a resume past --steps
//   lab::check_checkpoint_metadata(cfg.to_json(), tr.lineage());   // the final write will fit
//   lab::check_thread_budget(threads, "sweep --parallel-runs");    // threads under ulimit -v
//   lab::check_same_on_every_rank(comm, "sweep", settings_text);   // MPI ranks agree
//
// Each throws with one line naming the numbers and what to change; nothing has been trained or
// written when they throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/experiment/grid.hpp"
#include "lab/ranks/distributed.hpp"

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

// Collective. Throws JobFailure on every rank when the ranks were not given the same settings
// (compared by a 64-bit hash of `settings`; `what` names the command). A single process
// returns at once.
void check_same_on_every_rank(Communicator& comm, std::string_view what, std::string_view settings);

// The settings of a grid as text, for check_same_on_every_rank: every run's name, settings,
// evaluation, evaluation steps, starting checkpoint and table, in order.
std::string grid_settings(std::span<const GridRun> runs);

// Collective: every rank's `mine`, in rank order, each checked to be at most `max` (a size a
// peer sends is checked before anything is allocated for it); throws CommunicationError naming
// the rank otherwise (a rank running another command, or another collective).
std::vector<std::uint64_t> gather_sizes(Communicator& comm, std::uint64_t mine, std::uint64_t max,
                                        std::string_view what);

}  // namespace posemb::lab
