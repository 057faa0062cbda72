// lab/tasks/text.hpp: the text task's rows: a byte-level language model over a corpus
// (lab/tasks/corpus.hpp), every byte predicted from the ones before it. Token ids are the bytes
// 0..255; a row of length n is n bytes (n tokens), its targets the n bytes after each.
//
//   lab::Batch b;
//   lab::text::fill_train_batch(b, corpus, 32, 128, seed, step, lab::PositionMode::contiguous, 0);
//   // b.tokens (32, 128): training windows (lab::Corpus::train_window); b.targets the next bytes
//
//   auto plan = lab::text::plan_windows(corpus.validation().size(), 256, 256);  // Press et al.
//   lab::text::fill_windows(b, corpus, plan, 0, plan.windows, ...);  // every window, scored once
//
// Evaluation windows (Press et al. 2022's protocol, and its sliding-window variant): the
// validation text v[0..V) is cut into windows of T tokens starting at 0, S, 2S, ... (stride
// S <= T); window k reads v[kS, kS + T) at positions restarting at 0 and predicts
// v[kS + 1, kS + T + 1). With S = T the windows do not overlap and every target counts; with
// S < T, window 0 counts all its targets and every later window only its last S (the ones no
// earlier window predicted), each with at least T - S bytes of context. Either way every byte
// v[1], v[2], ... up to the last whole window is predicted exactly once; the bytes after it (at
// most S - 1, fewer than a window) are dropped, and the plan says how many.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lab/config.hpp"
#include "lab/tasks/corpus.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab::text {

inline constexpr std::size_t kVocab = 256;  // every byte value

// `rows` training windows of T tokens of step `step` (Corpus::train_window), positions 0..T-1
// or (mode randomized) a sorted sample of T distinct positions from [0, range) seeded by
// (seed, step, row); every target counts. Throws SequenceTooLong when randomized positions need
// more than range, ConfigError when the training part holds no window of T + 1 bytes.
void fill_train_batch(Batch& out, const Corpus& corpus, std::size_t rows, std::size_t T,
                      std::uint64_t seed, std::uint64_t step, PositionMode mode, std::size_t range);

// The windows of length T and stride S over a validation text of V bytes (the header's rule).
// Throws std::invalid_argument unless 1 <= S <= T.
WindowPlan plan_windows(std::size_t validation_bytes, std::size_t T, std::size_t S);

// Rows [first, first + count) of plan's windows over corpus's validation text: tokens, targets
// (-1 where a sliding window does not count), positions 0..T-1 or (randomized) a sorted sample
// from [0, range) seeded by (seed, window). Throws std::invalid_argument for rows outside the
// plan.
void fill_windows(Batch& out, const Corpus& corpus, const WindowPlan& plan, std::size_t first,
                  std::size_t count, PositionMode mode, std::size_t range, std::uint64_t seed);

}  // namespace posemb::lab::text
