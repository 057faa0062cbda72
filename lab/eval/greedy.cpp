// The greedy scorer (lab/eval/scorers.hpp): each row is given up to its first counted target's
// input (the prompt: BOS x1..xn SEP for a symbol task), then reads its own predictions (argmax,
// KV-cached); each prediction at a counted target is scored. exact_match: the fraction of rows
// with every counted target right; token_accuracy: the fraction of counted targets right
// (position by position, after the model's own earlier outputs).
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/eval/scorers.hpp"
#include "lab/model/decoder.hpp"
#include "lab/model/kernels.hpp"
#include "posemb/memory.hpp"

namespace posemb::lab {

std::size_t greedy_bytes(const ModelConfig& cfg, std::size_t rows, std::size_t tokens) {
  return Decoder::bytes(cfg, rows, tokens);
}

void score_greedy(LengthResult& out, Model& model, const Batch& batch, PositionMode mode) {
  const std::size_t B = batch.tokens.rows(), len = batch.tokens.cols();
  std::vector<std::size_t> first(B, len);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < len && first[b] == len; ++t) {
      if (batch.targets(b, t) >= 0) first[b] = t;
    }
  }
  Decoder dec(model, B, len);
  std::vector<TokenId> tok(B), pred(B);
  std::vector<std::int64_t> pos(B);
  std::vector<char> all_right(B, 1);
  std::size_t right = 0;
  for (std::size_t t = 0; t < len; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      tok[b] = t <= first[b] ? batch.tokens(b, t) : pred[b];
      pos[b] = batch.positions(b, t);
    }
    const auto logits = mode == PositionMode::contiguous ? dec.step(tok) : dec.step(tok, pos);
    for (std::size_t b = 0; b < B; ++b) {
      if (t < first[b]) continue;
      // The argmax of infinite or NaN logits is no prediction: an accuracy from them would be
      // garbage (a table of 3e38 values scored 0.000 everywhere), so evaluation stops.
      if (!all_finite(logits.row(b))) {
        throw std::runtime_error(
            "evaluate: the logits are infinite or NaN at length " + std::to_string(out.length) +
            ", instance " + std::to_string(b) + ", answer token " + std::to_string(t - first[b]) +
            ": the model's parameters (or its rope scaling) overflow float; no accuracy is "
            "reported");
      }
      pred[b] = static_cast<TokenId>(argmax(logits.row(b)));
      if (batch.targets(b, t) < 0) continue;
      if (pred[b] == batch.targets(b, t)) {
        ++right;
      } else {
        all_right[b] = 0;
      }
    }
  }
  std::size_t exact = 0;
  for (char c : all_right) exact += c ? 1 : 0;
  out.scoring = Scoring::greedy;
  out.counted = batch.counted;
  out.exact_match = static_cast<double>(exact) / static_cast<double>(B);
  out.token_accuracy = static_cast<double>(right) / static_cast<double>(batch.counted);
}

}  // namespace posemb::lab
