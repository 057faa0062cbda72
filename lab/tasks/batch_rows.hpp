// lab/tasks/batch_rows.hpp: what every task's batches share: a Batch shaped for B rows of T
// tokens, and the sorted random positions of an encoding trained on randomized positions (Ruoss
// et al. 2023).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lab/config.hpp"
#include "lab/tasks/task.hpp"
#include "posemb/random.hpp"

namespace posemb::lab {

// out's matrices (B, T) (reallocated only when the shape changes), row_tokens B zeros, counted 0.
void shape_batch(Batch& out, std::size_t B, std::size_t T);

// A sorted sample of `len` distinct positions from [0, range), written to out[0..len) (selection
// sampling, Knuth's algorithm S: each value is kept with probability needed / remaining).
// Requires len <= range.
void sorted_sample(std::int64_t* out, std::size_t len, std::size_t range, Rng& rng);

// Throws SequenceTooLong naming op when randomized positions need more distinct rows (len) than
// the table has (range); nothing for contiguous positions.
void check_position_range(const char* op, std::size_t len, PositionMode mode, std::size_t range);

}  // namespace posemb::lab
