// alibi: attention with linear biases (Press, Smith and Lewis, "Train Short, Test Long", ICLR
// 2022): no position vector anywhere; every head's attention score of query i and key j <= i
// gets -(m_h (i - j)) added, m_h the head's slope from the library's posemb::alibi_slopes and
// the bias the library's posemb::alibi_forward, given to the attention by distance
// (Encoding::scores_bias). The input layer is the token rows only (the library's token-only
// posemb::embed_forward). No table, no parameters; any position.
#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "lab/encodings/encoding.hpp"
#include "lab/encodings/token_only.hpp"
#include "posemb/alibi.hpp"

namespace posemb::lab {
namespace {

class Alibi final : public TokenOnlyInput {
 public:
  explicit Alibi(const ModelConfig& cfg) : slopes_(alibi_slopes(cfg.n_heads)) {}

  // Row h, column d: -(m_h d), the library's value for a query d positions after its key (its
  // causal form for one query at D - 1 against keys 0..D-1, read backwards: no second copy of
  // the formula).
  bool scores_bias(MatrixView<float> bias) const override {
    const std::size_t D = bias.cols();
    for (std::size_t h = 0; h < bias.rows(); ++h) std::fill_n(bias.row(h).data(), D, 0.0f);
    if (D == 0) return true;
    alibi_forward(bias, slopes_, 1, 1, {.start = D - 1});
    for (std::size_t h = 0; h < bias.rows(); ++h) {
      std::reverse(bias.row(h).begin(), bias.row(h).end());
    }
    return true;
  }

 private:
  std::vector<float> slopes_;  // (n_heads), head 0 first
};

}  // namespace

extern const EncodingSpec kAlibi{
    .name = "alibi",
    .summary =
        "ALiBi: a causal bias -m_h (i - j) on every head's attention scores, Press et al.'s "
        "slopes m_h; no table; any position",
    .has_table = false,
    .site = EncodingSite::scores,
    .in_demo = true,
    .table_tensor = "",
    .trainable = false,
    .tensors = nullptr,
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<Alibi>(cfg);
    },
};

}  // namespace posemb::lab
