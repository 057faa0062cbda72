// A config.json with another rope_scaling block (posemb/rope_config.hpp): the block's value
// rewritten in the text (config_json.hpp), every other byte kept; the result read back through
// the reader before anyone writes it.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config_json.hpp"
#include "file_system.hpp"
#include "posemb/errors.hpp"
#include "posemb/rope_config.hpp"

namespace posemb {
namespace {

using Json = detail::ConfigJson;

// The edit's optional parameters with the types that take them.
struct Param {
  const char* key;
  std::optional<double> RopeScalingEdit::*field;
  RopeScalingType type;
};
constexpr Param kParams[] = {
    {"low_freq_factor", &RopeScalingEdit::low_freq_factor, RopeScalingType::llama3},
    {"high_freq_factor", &RopeScalingEdit::high_freq_factor, RopeScalingType::llama3},
    {"beta_fast", &RopeScalingEdit::beta_fast, RopeScalingType::yarn},
    {"beta_slow", &RopeScalingEdit::beta_slow, RopeScalingType::yarn},
    {"attention_factor", &RopeScalingEdit::attention_factor, RopeScalingType::yarn},
    {"mscale", &RopeScalingEdit::mscale, RopeScalingType::yarn},
    {"mscale_all_dim", &RopeScalingEdit::mscale_all_dim, RopeScalingType::yarn},
};

bool takes_original(RopeScalingType t) {
  return t == RopeScalingType::yarn || t == RopeScalingType::llama3;
}

}  // namespace

void validate_rope_scaling_edit(const RopeScalingEdit& e) {
  const std::string name(rope_scaling_name(e.type));
  if (e.type == RopeScalingType::longrope) {
    throw std::invalid_argument(
        "set_rope_scaling: longrope needs per-pair short_factor and "
        "long_factor lists (found by search, as Phi-3's); write them "
        "into the config by hand");
  }
  if (e.type == RopeScalingType::ntk) {
    throw std::invalid_argument(
        "set_rope_scaling: 'ntk' is posemb's own fixed NTK-aware method, "
        "which transformers does not read; set 'dynamic' (NTK from the "
        "sequence length) or 'yarn'");
  }
  if (e.type == RopeScalingType::none && e.factor != 0.0) {
    throw std::invalid_argument("set_rope_scaling: 'default' takes no factor");
  }
  if (e.type != RopeScalingType::none && !(std::isfinite(e.factor) && e.factor >= 1.0)) {
    throw std::invalid_argument("set_rope_scaling: '" + name +
                                "' needs a factor >= 1 (the new length over the trained one)");
  }
  if (e.original_max_position_embeddings && !takes_original(e.type)) {
    throw std::invalid_argument(
        "set_rope_scaling: original_max_position_embeddings applies to "
        "yarn and llama3, not '" +
        name + "'");
  }
  if (e.original_max_position_embeddings == std::size_t{0}) {
    throw std::invalid_argument("set_rope_scaling: original_max_position_embeddings is 0");
  }
  for (const Param& p : kParams) {
    if ((e.*p.field).has_value() && p.type != e.type) {
      throw std::invalid_argument(std::string("set_rope_scaling: ") + p.key + " applies to '" +
                                  std::string(rope_scaling_name(p.type)) + "', not '" + name + "'");
    }
  }
}

EditedRopeConfig set_rope_scaling(const std::string& path, const RopeScalingEdit& edit) {
  detail::check_path(path, "set_rope_scaling");
  validate_rope_scaling_edit(edit);
  const std::string text = detail::read_config_text(path);
  const RopeConfig before = parse_rope_config(text, path);  // the input must be valid too
  const Json root = detail::parse_config_json(text, path);
  // The block's members, as JSON text.
  std::vector<std::pair<std::string, std::string>> block;
  // Sets key (in its place when the block has it already: a default the edit overrides).
  const auto add = [&](const char* key, const Json& value) {
    for (auto& member : block) {
      if (member.first == key) {
        member.second = value.dump();
        return;
      }
    }
    block.emplace_back(key, value.dump());
  };
  if (edit.type != RopeScalingType::none) {
    add("rope_type", std::string(rope_scaling_name(edit.type)));
    add("factor", edit.factor);
    if (takes_original(edit.type)) {
      add("original_max_position_embeddings",
          edit.original_max_position_embeddings.value_or(before.trained_length()));
    }
    if (edit.type == RopeScalingType::llama3) {
      add("low_freq_factor", edit.low_freq_factor.value_or(1.0));
      add("high_freq_factor", edit.high_freq_factor.value_or(4.0));
    }
    for (const Param& p : kParams) {
      if ((edit.*p.field).has_value()) add(p.key, *(edit.*p.field));
    }
  }
  // transformers 4 reads rope_scaling; 5 reads rope_scaling, or rope_parameters when that is
  // absent or null. Every block the file has gets the edit, so that each reads it; two that
  // disagree already are refused (parse_rope_config warns of them): which was meant is unknown.
  const bool has_scaling = root.contains("rope_scaling");
  const bool has_parameters = root.contains("rope_parameters");
  if (const std::string d = detail::rope_blocks_disagreement(root); !d.empty()) {
    throw FileFormatError(path, d + "; `rope --set` would write one block over both: delete "
                                    "the one the model does not mean first");
  }
  EditedRopeConfig out;
  std::vector<detail::ConfigValueEdit> edits;
  if (has_scaling || !has_parameters) {
    edits.push_back({{"rope_scaling"}, block.empty() ? "null" : detail::config_object_text(block)});
    out.keys.emplace_back("rope_scaling");
  }
  if (has_parameters) {
    // transformers 5 keeps rope_theta and partial_rotary_factor in the block: kept as written.
    auto v5 = block.empty() ? decltype(block){{"rope_type", "\"default\""}} : block;
    for (const char* k : {"rope_theta", "partial_rotary_factor"}) {
      if (const auto v = detail::config_value_text(text, {"rope_parameters", k})) {
        v5.emplace_back(k, std::string(*v));
      }
    }
    edits.push_back({{"rope_parameters"}, detail::config_object_text(v5)});
    out.keys.emplace_back("rope_parameters");
  }
  out.text = detail::edit_config_text(text, edits);
  try {
    out.config = parse_rope_config(out.text, path);
  } catch (const FileFormatError& e) {
    // The input was valid: what is wrong is the edit's values (with the file's own settings).
    throw std::invalid_argument("set_rope_scaling: the new " + out.keys.front() + " does not fit " +
                                quote_untrusted(path) + ": " + e.problem());
  }
  return out;
}

}  // namespace posemb
