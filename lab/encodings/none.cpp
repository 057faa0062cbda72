// none: no positional information; the causal mask alone (NoPE, Kazemnejad et al. 2023). The
// input layer is the token rows only (the library's token-only posemb::embed_forward).
#include <memory>

#include "lab/encoding.hpp"
#include "posemb/embedding.hpp"

namespace posemb::lab {
namespace {

class NoEncoding final : public Encoding {
 public:
  void embed_forward(MatrixView<float> x0, MatrixView<const TokenId> tokens, const PositionSource&,
                     MatrixView<const float> wte) const override {
    posemb::embed_forward(x0, tokens, wte);
  }
  void embed_backward(MatrixView<float> dwte, std::span<const MatrixView<float>>,
                      MatrixView<const float> dx0, MatrixView<const TokenId> tokens,
                      const PositionSource&) const override {
    posemb::embed_backward(dwte, dx0, tokens);
  }
};

}  // namespace

extern const EncodingSpec kNone{
    .name = "none",
    .summary = "no positional encoding: the causal mask alone (NoPE)",
    .has_table = false,
    .table_tensor = "",
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = [](const ModelConfig&) -> std::unique_ptr<Encoding> {
      return std::make_unique<NoEncoding>();
    },
};

}  // namespace posemb::lab
