// lab/task.hpp: the algorithmic tasks, generated in-process from a seed.
//
// A sequence is `BOS x1..xn SEP y1..yn EOS` over an alphabet of `alphabet` symbols (token ids:
// PAD 0, BOS 1, SEP 2, EOS 3, symbols 4..4+alphabet-1). The answer y has the n symbols of x:
//   copy       y = x
//   reverse    y = x reversed
//   sort       y = x in ascending order (by token id): a task of counting, not of positions
//   odd-first  y = x1 x3 x5 ... then x2 x4 ... ("Odds First", Deletang et al. 2023): every
//              answer token is found by its position alone
// The model reads `BOS x1..xn SEP y1..yn` (2n + 2 tokens, position 0..2n+1) and is scored on
// predicting y1..yn EOS (n + 1 answer tokens); the other targets are -1 (not counted).
//
//   lab::TaskConfig task;                        // copy, alphabet 8, train_len 16
//   lab::Batch batch;
//   lab::make_train_batch(batch, task, 32, seed, step, lab::PositionMode::contiguous, 0);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lab/config.hpp"
#include "posemb/matrix.hpp"
#include "posemb/positions.hpp"

namespace posemb::lab {

inline constexpr TokenId kPad = 0, kBos = 1, kSep = 2, kEos = 3, kFirstSymbol = 4;

struct Batch {
  Matrix<TokenId> tokens;            // (B, T) inputs, PAD after a short sequence
  Matrix<std::int64_t> positions;    // (B, T)
  Matrix<std::int32_t> targets;      // (B, T) next token on answer rows, -1 elsewhere
  std::vector<std::size_t> lengths;  // n of each row
  std::size_t answer_tokens = 0;     // counted targets
};

// The training batch of `step`: a deterministic function of (seed, step), so a resumed run sees
// the same data. T = input_len(train_len); rows shorter than T are padded with PAD tokens whose
// targets are -1 (causal attention keeps them from influencing real tokens) and whose positions
// repeat the row's last real position. range: the randomized positions' range (the table size).
void make_train_batch(Batch& out, const TaskConfig& task, std::size_t batch, std::uint64_t seed,
                      std::uint64_t step, PositionMode mode, std::size_t range);

// `count` instances of exactly n symbols (seeded), full length input_len(n).
// Throws SequenceTooLong when mode is randomized and input_len(n) > range.
void make_eval_batch(Batch& out, const TaskConfig& task, std::size_t n, std::size_t count,
                     std::uint64_t seed, PositionMode mode, std::size_t range);

// The answer y1..yn for symbols x (without EOS).
std::vector<TokenId> task_answer(TaskKind kind, const std::vector<TokenId>& x);

}  // namespace posemb::lab
