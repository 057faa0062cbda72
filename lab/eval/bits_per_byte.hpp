// lab/eval/bits_per_byte.hpp: a text model's loss on its corpus's validation text, in windows of
// one length (lab/tasks/text.hpp: Press et al.'s non-overlapping windows, or sliding ones), as
// bits per byte overall and by position inside the windows.
//
//   model.reserve_positions(256);                    // a computed encoding's positions, first
//   auto plan = lab::text::plan_windows(corpus.validation().size(), 256, 256);
//   lab::WindowScore s = lab::score_windows(model, corpus, plan, 64, mode, range, seed);
//   s.bits_per_byte();          // total NLL / ln 2 / plan.scored
//   s.buckets[2].bits_per_byte();   // the bytes predicted at positions [128, 192) of a window
//
// Every counted target of the plan's windows is scored once, teacher-forced (every input given):
// the model's forward pass (lab::Model::forward, the one used in training) over chunks of
// windows, each chunk's per-byte losses summed in window and position order in double, the chunks
// in order: the same bits for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lab/config.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/corpus.hpp"
#include "lab/tasks/text.hpp"

namespace posemb::lab {

// The bytes predicted at window positions [begin, end) and their summed loss.
struct BucketScore {
  std::size_t begin = 0, end = 0;
  double nll = 0.0;              // nats
  std::size_t bytes = 0;         // targets counted
  double bits_per_byte() const;  // nll / ln 2 / bytes (0 without bytes)
};

struct WindowScore {
  text::WindowPlan plan;
  double nll = 0.0;                  // nats over the plan.scored bytes
  std::vector<BucketScore> buckets;  // positions [0, L), [L, 2L), ... up to the window's T
  double bits_per_byte() const;      // nll / ln 2 / plan.scored
};

// Windows per forward pass: bounds the activations (B H T^2 attention weights a layer).
inline constexpr std::size_t kWindowChunk = 8;

// The bytes score_windows allocates for windows of T tokens (saturating).
std::size_t window_score_bytes(const ModelConfig& cfg, std::size_t T);
// Multiply-adds of score_windows on plan (the products and the attention; an estimate).
double window_score_work(const ModelConfig& cfg, const text::WindowPlan& plan);

// Scores every window of plan over corpus's validation text, positions as mode/range/seed
// (lab::text::fill_windows), buckets of bucket_len positions (>= 1). Reads the model only, so
// lengths may be scored concurrently once the model's positions are reserved. Throws
// SequenceTooLong when a position is past a learned table, std::runtime_error naming T when a
// loss is infinite or NaN.
WindowScore score_windows(Model& model, const Corpus& corpus, const text::WindowPlan& plan,
                          std::size_t bucket_len, PositionMode mode, std::size_t range,
                          std::uint64_t seed);

}  // namespace posemb::lab
