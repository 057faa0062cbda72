// tools/posemb/files/model_files.hpp: the checkpoints `posemb make-checkpoint` writes: the
// embedding tensors of GPT-2, BERT, RoBERTa, ViT and CLIP under their Hugging Face names and
// shapes, with the config.json keys that go with them, the values drawn at random (seeded), so
// that a user without network can try every command on a file shaped like the real one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/checkpoint_folder.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::cli {

// The models, as make-checkpoint's MODEL argument spells them.
inline constexpr std::string_view kModelFileNames[] = {"gpt2", "bert", "roberta", "vit", "clip"};

// A model's checkpoint in memory.
struct ModelFiles {
  std::vector<Tensor> tensors = {};      // in the order of the model's modules
  std::string config_text = {};          // config.json (keys sorted, indent 2, as transformers)
  Metadata metadata = {};                // safetensors' __metadata__: format pt, posemb.provenance
  std::vector<std::string> tables = {};  // the position table(s) among the tensors
  std::string note = {};                 // what a user should know (reserved rows, two tables)
};

// The tensors and config of `model` (one of kModelFileNames) at its real width, or `dim`
// columns when given (BERT's, GPT-2's hidden size; both CLIP towers'), drawn with `seed`: normal
// (0, 0.02) tables as transformers initializes them (a padding row zero: RoBERTa's position row
// 1 and token row 1, BERT's token row 0), LayerNorm weights 1 and biases 0, position_ids
// 0, 1, 2, ... Throws std::invalid_argument for an unknown model or a dim of 0 or over 65536,
// and MemoryLimitExceeded, before drawing the values, when the tensors (with a copy for a dtype
// conversion) would not fit the memory budget (RoBERTa's 50265 x 65536 floats are 13 GB).
ModelFiles model_files(std::string_view model, std::optional<std::size_t> dim, std::uint64_t seed);

// The tensors split into `count` weight files named as transformers names shards
// (model-00001-of-00002.safetensors, ...; one file: model.safetensors), in order, each shard
// holding about its share of the bytes (GPT-2's token table alone in the first of two). Throws
// std::invalid_argument when count is 0 or more than the tensors.
std::vector<CheckpointShard> split_into_shards(const std::vector<Tensor>& tensors,
                                               std::size_t count);

}  // namespace posemb::cli
