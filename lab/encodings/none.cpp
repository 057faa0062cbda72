// none: no positional information; the causal mask alone (NoPE, Kazemnejad et al. 2023). The
// input layer is the token rows only (the library's token-only posemb::embed_forward).
#include <memory>

#include "lab/encodings/encoding.hpp"
#include "lab/encodings/token_only.hpp"

namespace posemb::lab {
namespace {

class NoEncoding final : public TokenOnlyInput {};

}  // namespace

extern const EncodingSpec kNone{
    .name = "none",
    .summary = "no positional encoding: the causal mask alone (NoPE)",
    .has_table = false,
    .site = EncodingSite::nowhere,
    .in_demo = true,
    .table_tensor = "",
    .trainable = false,
    .tensors = nullptr,
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = [](const ModelConfig&) -> std::unique_ptr<Encoding> {
      return std::make_unique<NoEncoding>();
    },
};

}  // namespace posemb::lab
