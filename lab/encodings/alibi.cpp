// alibi: attention with linear biases (Press, Smith and Lewis, "Train Short, Test Long", ICLR
// 2022): no position vector anywhere; every head's attention score of query i and key j <= i
// gets -(m_h (i - j)) added, m_h the head's slope from the library's posemb::alibi_slopes and
// the bias the library's posemb::alibi_forward (lab/attention.hpp). The input layer is the token
// rows only (the library's token-only posemb::embed_forward). No table, no parameters; any
// position.
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

  std::span<const float> attention_slopes() const override { return slopes_; }

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
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<Alibi>(cfg);
    },
};

}  // namespace posemb::lab
