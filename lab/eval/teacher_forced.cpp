// The teacher-forced scorer (lab/eval/scorers.hpp): every input given, the model's forward pass
// over chunks of kChunkRows rows (each its own activations, in row order), the loss of every
// counted target summed and divided by their count: loss is the mean negative log-likelihood
// (nats) of the counted targets; bits per token is loss / ln 2 (a text's bits per byte).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/eval/scorers.hpp"

namespace posemb::lab {
namespace {

// Rows per forward pass: bounds the activations (B T^2 attention weights a layer) at long lengths.
constexpr std::size_t kChunkRows = 8;

}  // namespace

std::size_t teacher_forced_bytes(const ModelConfig& cfg, std::size_t rows, std::size_t tokens) {
  return Activations::bytes(cfg, std::min(rows, kChunkRows), tokens);
}

void score_teacher_forced(LengthResult& out, Model& model, const Batch& batch, PositionMode) {
  const std::size_t B = batch.tokens.rows(), T = batch.tokens.cols();
  Activations acts(model.config(), std::min(B, kChunkRows), T);
  std::vector<std::size_t> rows;
  double loss = 0.0;  // the chunks' sums over the counted targets, each divided by their count
  for (std::size_t r0 = 0; r0 < B; r0 += kChunkRows) {
    rows.resize(std::min(kChunkRows, B - r0));
    std::iota(rows.begin(), rows.end(), r0);
    loss += model.forward(acts, batch.tokens, batch.positions, batch.targets, rows,
                          std::max<std::size_t>(batch.counted, 1));
  }
  if (!std::isfinite(loss)) {
    throw std::runtime_error("evaluate: the loss is " + std::to_string(loss) + " at length " +
                             std::to_string(out.length) +
                             ": the model's parameters (or its rope scaling) overflow float; no "
                             "loss is reported");
  }
  out.scoring = Scoring::teacher_forced;
  out.counted = batch.counted;
  out.loss = loss;
}

}  // namespace posemb::lab
