// t5-bias: T5's learned relative position bias (Raffel et al. 2020; Hugging Face T5Attention's
// relative_attention_bias): no position vector anywhere; one learned scalar per head and bucket
// of the distance query - key, added to every head's attention scores, one (num_buckets, heads)
// table shared by every layer as T5 does. The buckets are the library's causal ones
// (posemb::t5_relative_bucket with bidirectional = false, T5's decoder), the rows by distance the
// library's posemb::relative_bias_forward and their gradient its relative_bias_backward, given
// to the attention through Encoding::scores_bias / scores_bias_backward. The input layer is the
// token rows only. Any position: every distance past max_distance shares the last bucket.
//
// The defaults for training rows of L tokens: num_buckets min(32, L) (T5's 32, fewer for short
// rows) and max_distance L, so that the distance L - 1 already falls in the last bucket: every
// bucket any distance can reach is trained at L (with T5's max_distance of 128 and L = 64, five
// buckets would be read for the first time past L; docs/t5_bias.md).
#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/encodings/encoding.hpp"
#include "lab/encodings/token_only.hpp"
#include "posemb/matrix.hpp"
#include "posemb/relative_bias.hpp"

namespace posemb::lab {
namespace {

constexpr const char* kTableName = "relative_attention_bias.weight";  // Hugging Face's
constexpr std::size_t kT5Buckets = 32;                                // T5's num_buckets

RelativeBuckets buckets_of(const ModelConfig& cfg) {
  return {.num_buckets = cfg.relative_bias.num_buckets,
          .max_distance = cfg.relative_bias.max_distance,
          .bidirectional = false};
}

class T5Bias final : public TokenOnlyInput {
 public:
  explicit T5Bias(const ModelConfig& cfg)
      : buckets_(buckets_of(cfg)),
        table_(cfg.relative_bias.num_buckets, cfg.n_heads),
        grad_(cfg.relative_bias.num_buckets, cfg.n_heads) {}

  // Row h, column d: table[bucket(-d)][h], the library's bias of one query at D - 1 against the
  // keys 0..D-1, read backwards (column j there is the distance D - 1 - j).
  bool scores_bias(MatrixView<float> bias) const override {
    const std::size_t D = bias.cols();
    if (D == 0) return true;
    relative_bias_forward(bias, table_.cview(), buckets_, 1, {.query_start = D - 1});
    for (std::size_t h = 0; h < bias.rows(); ++h) {
      std::reverse(bias.row(h).begin(), bias.row(h).end());
    }
    return true;
  }

  // dbias (H, D) by distance, put back in key order, through the library's backward (summed per
  // bucket in double in a fixed order, rounded once, added into grads[0]).
  void scores_bias_backward(std::span<const MatrixView<float>> grads,
                            MatrixView<const float> dbias) const override {
    const std::size_t H = dbias.rows(), D = dbias.cols();
    if (D == 0 || H == 0) return;
    Matrix<float> by_key(H, D);
    for (std::size_t h = 0; h < H; ++h) {
      std::reverse_copy(dbias.row(h).begin(), dbias.row(h).end(), by_key.row(h).begin());
    }
    relative_bias_backward(grads[0], by_key.cview(), buckets_, 1, {.query_start = D - 1});
  }

  std::vector<TensorSlot> tensors() override { return {{kTableName, table_.view(), grad_.view()}}; }
  void zero_grad() override { std::fill(grad_.flat().begin(), grad_.flat().end(), 0.0f); }

 private:
  RelativeBuckets buckets_;
  Matrix<float> table_, grad_;  // (num_buckets, n_heads)
};

RelativeBiasConfig default_buckets(std::size_t train_tokens, RelativeBiasConfig given) {
  RelativeBiasConfig b = given;
  if (b.num_buckets == 0) b.num_buckets = std::clamp<std::size_t>(train_tokens, 2, kT5Buckets);
  // Causal: max_exact = num_buckets / 2 exact buckets, and max_distance must be above it.
  if (b.max_distance == 0) b.max_distance = std::max(train_tokens, b.num_buckets / 2 + 1);
  return b;
}

// The library's refusals (max_distance not above max_exact = num_buckets / 2, ...), as the
// settings' error.
void validate(const ModelConfig& cfg) {
  try {
    (void)t5_relative_bucket(0, buckets_of(cfg));
  } catch (const std::invalid_argument& e) {
    throw ConfigError({"model.relative_bias.num_buckets", "model.relative_bias.max_distance"},
                      std::string("model config: relative-position buckets: ") + e.what());
  }
}

}  // namespace

extern const EncodingSpec kT5Bias{
    .name = "t5-bias",
    .summary =
        "T5's learned relative bias: a scalar per head and bucket of the distance (causal "
        "buckets, log-spaced up to max_distance, by default the training length) added to the "
        "attention scores, one table shared by every layer; any position",
    .has_table = false,
    .site = EncodingSite::scores,
    .in_demo = false,
    .table_tensor = "",
    .trainable = true,
    .tensors = [](const ModelConfig& cfg) -> std::vector<TensorInfo> {
      return {{kTableName, cfg.relative_bias.num_buckets, cfg.n_heads}};
    },
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .default_relative_bias = default_buckets,
    .validate = validate,
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<T5Bias>(cfg);
    },
};

}  // namespace posemb::lab
