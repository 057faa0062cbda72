// A text model's bits per byte in windows of one length (lab/eval/bits_per_byte.hpp).
#include "lab/eval/bits_per_byte.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "posemb/memory.hpp"

namespace posemb::lab {

double BucketScore::bits_per_byte() const {
  return bytes == 0 ? 0.0 : nll / std::numbers::ln2 / static_cast<double>(bytes);
}

double WindowScore::bits_per_byte() const {
  return plan.scored == 0 ? 0.0 : nll / std::numbers::ln2 / static_cast<double>(plan.scored);
}

std::size_t window_score_bytes(const ModelConfig& cfg, std::size_t T) {
  // The chunk's activations and its batch (tokens, positions, targets).
  const std::size_t batch = saturating_mul(saturating_mul(kWindowChunk, T), 4 + 8 + 4);
  return saturating_add(Activations::bytes(cfg, kWindowChunk, T), batch);
}

double window_score_work(const ModelConfig& m, const text::WindowPlan& plan) {
  const auto C = static_cast<double>(m.d_model), F = static_cast<double>(m.d_ff);
  const auto L = static_cast<double>(m.n_layers), V = static_cast<double>(m.vocab_size);
  const auto T = static_cast<double>(plan.tokens);
  // Each token: the projections and MLP of every layer and the head; each window: attention over
  // the tokens before each token (scores and values).
  const double window = T * (L * (4 * C * C + 2 * C * F) + C * V) + L * C * T * (T + 1);
  return window * static_cast<double>(plan.windows);
}

WindowScore score_windows(Model& model, const Corpus& corpus, const text::WindowPlan& plan,
                          std::size_t bucket_len, PositionMode mode, std::size_t range,
                          std::uint64_t seed) {
  if (bucket_len == 0) throw std::invalid_argument("score_windows: bucket_len must be >= 1");
  const std::size_t T = plan.tokens;
  WindowScore out;
  out.plan = plan;
  for (std::size_t b = 0; b < T; b += bucket_len) {
    out.buckets.push_back({b, std::min(T, b + bucket_len), 0.0, 0});
  }
  if (plan.windows == 0) return out;
  check_allocation("evaluate text (windows of " + std::to_string(T) + " bytes, " +
                       std::to_string(kWindowChunk) + " at a time)",
                   window_score_bytes(model.config(), T));
  Activations acts(model.config(), std::min(kWindowChunk, plan.windows), T);
  Batch batch;
  for (std::size_t first = 0; first < plan.windows; first += kWindowChunk) {
    const std::size_t rows = std::min(kWindowChunk, plan.windows - first);
    text::fill_windows(batch, corpus, plan, first, rows, mode, range, seed);
    (void)model.forward(acts, batch.tokens, batch.positions, batch.targets);
    // The per-byte losses of the counted targets, in window and position order.
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t t = 0; t < T; ++t) {
        if (batch.targets(r, t) < 0) continue;
        const double loss = acts.losses[r * T + t];
        if (!std::isfinite(loss)) {
          throw std::runtime_error(
              "evaluate: the loss is " + std::to_string(loss) + " in window " +
              std::to_string(first + r) + " of " + std::to_string(T) +
              " bytes: the model's parameters (or its rope scaling) overflow float; no bits per "
              "byte are reported");
        }
        out.nll += loss;
        BucketScore& b = out.buckets[t / bucket_len];
        b.nll += loss;
        ++b.bytes;
      }
    }
  }
  return out;
}

}  // namespace posemb::lab
