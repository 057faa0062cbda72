// src/io/config_json.hpp (internal): a Hugging Face config.json as text and as JSON, strictly,
// and the one way posemb edits one: values replaced in the text, every other byte kept. Used by
// the rope reader and editor (rope_config.cpp, rope_config_edit.cpp) and by a checkpoint folder's
// length keys (hf_config.cpp).
//
//   const std::string text = read_config_text("vit/config.json");
//   (void)parse_config_json(text, "vit/config.json");   // validated first: edits assume it
//   std::string out = edit_config_text(text, {{{"image_size"}, "384"}});
//   // every other key, number, space and line as it was; 1e-400 stays 1e-400
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace posemb::detail {

// Key order kept, so that an edited config lists its keys as the original did.
using ConfigJson = nlohmann::ordered_json;

// The file's bytes (a regular file of at most 16 MiB). Throws FileFormatError or
// std::system_error.
std::string read_config_text(const std::string& path);

// Parses config JSON text: a syntax error, a NUL byte, a key twice in one object, nesting deeper
// than kMaxJsonDepth or a top level that is not an object is a FileFormatError naming `source`.
ConfigJson parse_config_json(std::string_view text, std::string_view source);

// One value to write: `path` is its key from the top level ({"vision_config", "image_size"}),
// `json` the new value's JSON text (several lines, as ConfigJson::dump(2) writes them, are
// indented to the key's line).
struct ConfigValueEdit {
  std::vector<std::string> path;
  std::string json;
};

// text (which parse_config_json accepted) with each edit's value written over the old value's
// bytes, or, when the object lacks the key, added after its last member on a line of its own;
// every other byte is kept (numbers as written, spacing, key order). Throws
// std::invalid_argument when a key on a path but the last is absent or not an object.
std::string edit_config_text(std::string_view text, const std::vector<ConfigValueEdit>& edits);

// The JSON text of the value at path exactly as written ("1e-400", not 0), or nullopt when a key
// on the path is absent (text as for edit_config_text).
std::optional<std::string_view> config_value_text(std::string_view text,
                                                  const std::vector<std::string>& path);

// The JSON text of an object with these members ({key, value's JSON text}), one per line,
// indented by 2 as ConfigJson::dump(2) writes it; a value's own text is kept as given.
std::string config_object_text(const std::vector<std::pair<std::string, std::string>>& members);

// When root has both rope_scaling and rope_parameters set (not null) and they give different
// scalings (rope_theta and partial_rotary_factor, which transformers 5 keeps in
// rope_parameters, aside; `type` read as `rope_type`): a sentence naming both keys and their
// values. Else "". (rope_config.cpp)
std::string rope_blocks_disagreement(const ConfigJson& root);

}  // namespace posemb::detail
