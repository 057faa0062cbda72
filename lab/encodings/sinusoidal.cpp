// sinusoidal: Vaswani et al. 2017's encoding (posemb::sinusoidal_positional_encoding, interleaved
// sin/cos), added to the token embedding by the library's fused posemb::embed_forward with the
// encoding's rows as a fixed (untrained) position table. Any position.
#include <algorithm>
#include <memory>

#include "lab/encodings/encoding.hpp"
#include "posemb/embedding.hpp"
#include "posemb/matrix.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb::lab {
namespace {

class SinusoidalEncoding final : public Encoding {
 public:
  explicit SinusoidalEncoding(const ModelConfig& cfg)
      : dim_(cfg.d_model), base_(cfg.sinusoidal_base) {}

  void embed_forward(MatrixView<float> x0, MatrixView<const TokenId> tokens,
                     const PositionSource& positions, MatrixView<const float> wte) const override {
    posemb::embed_forward(x0, tokens, positions, wte, table_);
  }
  void embed_backward(MatrixView<float> dwte, std::span<const MatrixView<float>>,
                      MatrixView<const float> dx0, MatrixView<const TokenId> tokens,
                      const PositionSource&) const override {
    posemb::embed_backward(dwte, dx0, tokens);
  }
  // The rows grow by doubling, so a run reserves O(log n) times.
  void reserve(std::size_t positions) override {
    if (table_.rows() >= positions) return;
    Matrix<float> table(std::max(positions, 2 * table_.rows()), dim_);
    sinusoidal_positional_encoding_into(table.view(), 0, {.base = base_});
    table_ = std::move(table);
  }

 private:
  std::size_t dim_;
  double base_;
  Matrix<float> table_;  // (positions reserved, d_model)
};

}  // namespace

extern const EncodingSpec kSinusoidal{
    .name = "sinusoidal",
    .summary =
        "Vaswani et al. 2017's sin/cos encoding added to the token embedding; any "
        "position",
    .has_table = false,
    .site = EncodingSite::input,
    .in_demo = true,
    .table_tensor = "",
    .trainable = false,
    .tensors = nullptr,
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    // The encoding's entries are of size 1; with 0.02-sized token embeddings the token identity
    // drowns after the first LayerNorm (Vaswani et al. scale embeddings by sqrt(d_model)).
    .default_embed_init_std = 1.0,
    .validate = nullptr,
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<SinusoidalEncoding>(cfg);
    },
};

}  // namespace posemb::lab
