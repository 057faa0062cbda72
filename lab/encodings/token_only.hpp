// lab/encodings/token_only.hpp: the input layer of encodings that add nothing to the token
// rows (rope, none): the library's token-only posemb::embed_forward / embed_backward.
#pragma once

#include <span>

#include "lab/encodings/encoding.hpp"
#include "posemb/embedding.hpp"

namespace posemb::lab {

class TokenOnlyInput : public Encoding {
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

}  // namespace posemb::lab
