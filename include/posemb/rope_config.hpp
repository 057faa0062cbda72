// posemb/rope_config.hpp: a model's rotary embedding as its Hugging Face config.json describes
// it, read strictly, and the same file with another rope_scaling block.
//
//   posemb::RopeConfig c = posemb::read_rope_config("Llama-3.1-8B/config.json");
//   for (const auto& w : c.warnings) std::cerr << w << "\n";     // keys posemb did not use
//   posemb::Rope rope = c.rope(posemb::RopeLayout::half);         // llama3, 128 dims, 500000
//   c.trained_length();   // 8192      c.extended_length();   // 131072
//
//   posemb::RopeScalingEdit e{.type = posemb::RopeScalingType::yarn, .factor = 4};
//   posemb::EditedRopeConfig out = posemb::set_rope_scaling("Llama-2-7b/config.json", e);
//   posemb::write_file_atomically("long/config.json", "rope", out.text);
//   out.config.scaled_length();   // 16384: 4 x the trained 4096
//
// The keys read (all others are left alone and not reported):
//   rope_theta                  the base (GPT-NeoX's rotary_emb_base too); absent (configs
//                               before transformers 4.34, Llama 2's): 10000 with a warning
//   head_dim                    D; when absent or null, hidden_size / num_attention_heads
//   partial_rotary_factor       R = int(D * partial_rotary_factor) (GPT-NeoX: rotary_pct);
//                               default 1
//   max_position_embeddings     required; the trained length of linear, ntk and dynamic
//   original_max_position_embeddings (top level)   the trained length of longrope (Phi-3)
//   rope_scaling                null or absent: none; else an object with `rope_type` (or the
//                               older `type`; "su" is Phi-3's early name for longrope) and the
//                               keys of that method (posemb/rope_scaling.hpp), as transformers'
//                               modeling_rope_utils.py reads them. transformers 5's
//                               `rope_parameters` block is read the same way when rope_scaling
//                               is absent or null (transformers reads rope_scaling first); both
//                               set and disagreeing: a warning (and set_rope_scaling refuses).
// A missing required key, a value of the wrong type or out of range, an unknown method, a
// factor list of the wrong length, a key given twice: FileFormatError (a std::runtime_error),
// one line naming the file and the key. A key of rope_scaling the method does not use: a
// warning in RopeConfig::warnings (the library never prints).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/rope.hpp"
#include "posemb/rope_scaling.hpp"

namespace posemb {

struct RopeConfig {
  std::size_t head_dim = 0;                 // D
  std::size_t rotary_dim = 0;               // R <= D
  double base = 10000.0;                    // rope_theta
  RopeScaling scaling = NoScaling{};        // from rope_scaling
  std::size_t max_position_embeddings = 0;  // as written
  std::vector<std::string> warnings = {};   // one line each

  // The Rope of this config for sequences of seq_len positions (0: the trained length).
  RopeOptions options(std::size_t seq_len = 0) const;
  Rope rope(RopeLayout layout, std::size_t seq_len = 0) const;
  // L0, the length the model was trained on: the scaling's original_max_position_embeddings
  // (yarn, llama3, longrope), else max_position_embeddings.
  std::size_t trained_length() const;
  // factor * L0 rounded down: the length the scaling's factor stretches the trained one to
  // (L0 without a factor). Saturates at SIZE_MAX when factor * L0 >= 2^64.
  std::size_t scaled_length() const;
  // The length the config targets: max_position_embeddings when it exceeds L0 (Llama 3.1,
  // Phi-3), else scaled_length() (so SIZE_MAX when that saturates).
  std::size_t extended_length() const;
};

// Reads and validates a config.json (at most 16 MiB). Throws FileFormatError as above,
// std::system_error when the file cannot be read.
RopeConfig read_rope_config(const std::string& path);

// The same from JSON text; `source` names it in messages (a path, "config").
RopeConfig parse_rope_config(std::string_view json_text, std::string_view source);

// A new rope_scaling block. Only the parameters of `type` may be set (longrope, which needs
// per-pair lists, cannot be made this way).
struct RopeScalingEdit {
  RopeScalingType type = RopeScalingType::none;
  double factor = 0.0;  // required for every type but none
  // L0 written into the block (yarn, llama3); unset: the config's trained length.
  std::optional<std::size_t> original_max_position_embeddings = std::nullopt;
  std::optional<double> low_freq_factor = std::nullopt;   // llama3 (default 1)
  std::optional<double> high_freq_factor = std::nullopt;  // llama3 (default 4)
  std::optional<double> beta_fast = std::nullopt;         // yarn
  std::optional<double> beta_slow = std::nullopt;         // yarn
  std::optional<double> attention_factor = std::nullopt;  // yarn
  std::optional<double> mscale = std::nullopt;            // yarn
  std::optional<double> mscale_all_dim = std::nullopt;    // yarn
};

// Throws std::invalid_argument naming the parameter (as config.json spells it) when the edit
// sets a parameter its type does not take, or lacks the factor.
void validate_rope_scaling_edit(const RopeScalingEdit& edit);

struct EditedRopeConfig {
  std::string text = {};   // the whole config.json: only the block's value rewritten, every other
                           // byte as it was (numbers as written, spacing, key order)
  RopeConfig config = {};  // the text read back (validated): what it targets
  std::vector<std::string> keys = {};  // the blocks written: rope_scaling, rope_parameters
};

// The config at `path` with its rope_scaling block replaced by the edit's (null for none). A
// config with transformers 5's rope_parameters gets the block there too (rope_type "default"
// for none; its rope_theta and partial_rotary_factor kept), so that transformers 4, which reads
// rope_scaling, and 5, which reads rope_scaling first and then rope_parameters, both read the
// edit. Reads and validates the input first (FileFormatError naming the file and key; also when
// rope_scaling and rope_parameters both set a scaling and disagree, since which was meant is
// unknown); validates the result (std::invalid_argument naming the key, when the edit's values do
// not make a valid scaling with the file's settings). Writes nothing.
EditedRopeConfig set_rope_scaling(const std::string& path, const RopeScalingEdit& edit);

}  // namespace posemb
