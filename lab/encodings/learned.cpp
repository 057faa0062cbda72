// learned and learned-randomized: a trainable position table (GPT-2's wpe), a
// posemb::LearnedPositionalEmbedding, entering the input layer through the library's fused
// posemb::embed_forward / embed_backward. learned trains on positions 0..len-1 with a table of
// exactly the longest training sequence; learned-randomized (Ruoss et al. 2023) trains on a
// sorted random sample of distinct positions from a much longer table.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "lab/encodings/encoding.hpp"
#include "posemb/embedding.hpp"
#include "posemb/positions.hpp"

namespace posemb::lab {
namespace {

class LearnedEncoding final : public Encoding {
 public:
  LearnedEncoding(const ModelConfig& cfg, std::string_view name)
      : name_(name), layer_(cfg.max_seq_len, cfg.d_model, Initializer{InitKind::zeros, 0.0, 0}) {}

  void embed_forward(MatrixView<float> x0, MatrixView<const TokenId> tokens,
                     const PositionSource& positions, MatrixView<const float> wte) const override {
    posemb::embed_forward(x0, tokens, positions, wte, layer_.table());
  }
  void embed_backward(MatrixView<float> dwte, std::span<const MatrixView<float>> grads,
                      MatrixView<const float> dx0, MatrixView<const TokenId> tokens,
                      const PositionSource& positions) const override {
    posemb::embed_backward(dwte, grads[0], dx0, tokens, positions);
  }
  void check_positions(const PositionSource& positions, std::size_t batch,
                       std::size_t seq_len) const override {
    (void)resolve_positions(positions, batch, seq_len, layer_.max_seq_len());
  }
  std::vector<TensorSlot> tensors() override { return {{name_, layer_.table(), layer_.grad()}}; }
  void zero_grad() override { layer_.zero_grad(); }
  const LearnedPositionalEmbedding* learned_table() const override { return &layer_; }

 private:
  std::string name_;                  // the table's checkpoint name
  LearnedPositionalEmbedding layer_;  // (max_seq_len, d_model), with its gradient
};

constexpr std::string_view kTableName = "wpe.weight";  // GPT-2's name

// The table: (max_seq_len, d_model).
std::vector<TensorInfo> table_shape(const ModelConfig& cfg) {
  return {{std::string(kTableName), cfg.max_seq_len, cfg.d_model}};
}

std::unique_ptr<Encoding> make(const ModelConfig& cfg) {
  return std::make_unique<LearnedEncoding>(cfg, kTableName);
}

}  // namespace

extern const EncodingSpec kLearned{
    .name = "learned",
    .summary =
        "a trainable table (GPT-2), positions 0..len-1; table rows default to the "
        "longest training sequence",
    .has_table = true,
    .site = EncodingSite::input,
    .in_demo = true,
    .table_tensor = kTableName,
    .trainable = true,
    .tensors = table_shape,
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t train_tokens) { return train_tokens; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = make,
};

extern const EncodingSpec kLearnedRandomized{
    .name = "learned-randomized",
    .summary =
        "a trainable table of L rows, each sequence at sorted random positions from "
        "[0, L) (Ruoss et al. 2023); L defaults to max(256, 4x the longest sequence)",
    .has_table = true,
    .site = EncodingSite::input,
    .in_demo = true,
    .table_tensor = kTableName,
    .trainable = true,
    .tensors = table_shape,
    .train_positions = PositionMode::randomized,
    .default_table_rows =
        [](std::size_t train_tokens) { return std::max<std::size_t>(256, 4 * train_tokens); },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = make,
};

}  // namespace posemb::lab
