// lab/tasks/symbols.hpp: the symbol tasks' common layout (copy, reverse, sort, odd-first: one
// file each, which gives its answer rule), generated in-process from a seed.
//
// A row is `BOS x1..xn SEP y1..yn EOS` over an alphabet of `alphabet` symbols (token ids: PAD 0,
// BOS 1, SEP 2, EOS 3, symbols 4..4+alphabet-1); y is the task's answer, n symbols. The model
// reads `BOS x1..xn SEP y1..yn` (2n + 2 tokens, positions 0..2n+1, the length rule) and its
// counted targets are y1..yn EOS (n + 1 tokens, from the token after SEP's input on); the other
// targets are -1. In training n is drawn uniformly from [1, train_len].
//
//   extern const lab::TaskSpec kReverse{..., .train_batch = lab::symbols::train_batch<answer>,
//   ...};
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab::symbols {

inline constexpr TokenId kPad = 0, kBos = 1, kSep = 2, kEos = 3, kFirstSymbol = 4;

// The answer y1..yn of a task for symbols x1..xn.
using Answer = std::vector<TokenId> (*)(const std::vector<TokenId>& x);

// The alphabet and the four special tokens.
std::size_t vocab_size(const TaskConfig& cfg);
// 2n + 2.
std::size_t tokens(std::size_t n);
// "2 n + 2", for messages.
inline constexpr const char* kLengthRule = "2 n + 2";

// The batches of TaskSpec (lab/tasks/task.hpp) for the answer rule `answer`.
void fill_train_batch(Batch& out, const TaskConfig& cfg, std::size_t rows, std::uint64_t seed,
                      std::uint64_t step, PositionMode mode, std::size_t range, Answer answer);
void fill_eval_batch(Batch& out, const TaskConfig& cfg, std::size_t n, std::size_t rows,
                     std::uint64_t seed, PositionMode mode, std::size_t range, Answer answer);
template <Answer answer>
void train_batch(Batch& out, const TaskConfig& cfg, std::size_t rows, std::uint64_t seed,
                 std::uint64_t step, PositionMode mode, std::size_t range) {
  fill_train_batch(out, cfg, rows, seed, step, mode, range, answer);
}
template <Answer answer>
void eval_batch(Batch& out, const TaskConfig& cfg, std::size_t n, std::size_t rows,
                std::uint64_t seed, PositionMode mode, std::size_t range) {
  fill_eval_batch(out, cfg, n, rows, seed, mode, range, answer);
}

// The demo's quick preset of every symbol task: n <= 6 with a fraction of the steps (a smoke
// run: its accuracies are not the demo's).
inline constexpr DemoPreset kQuick{6, 400, 800, 30, 300, 200, 50, 18, 30};

}  // namespace posemb::lab::symbols
