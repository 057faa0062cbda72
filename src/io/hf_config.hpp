// src/io/hf_config.hpp (internal): the length keys of a Hugging Face config.json, per model
// family (see posemb/checkpoint_folder.hpp), checked against a table and updated for a new one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "posemb/checkpoint_folder.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::detail {

// Throws FileFormatError naming source when text is not a JSON object or has a key twice in one
// object (detail::parse_config_json).
void check_config_json(const std::string& text, const std::string& source);

// config_text with the length keys of the table called tensor_name set for new_rows rows (and
// new_grid, for a vision table) by edit_config_text (config_json.hpp): only those values are
// rewritten, every other byte is kept (numbers as written, spacing, key order). The keys changed
// are appended to changes (value: old, as written; expected: new). Throws FileFormatError naming
// source when config_text is not a JSON object or has a key twice in one object (as `posemb
// rope` refuses it), and std::invalid_argument when a vision table's config has no usable
// patch_size.
std::string updated_config(const std::string& config_text, const std::string& source,
                           const TensorFile& file, const std::string& tensor_name,
                           std::size_t new_rows, std::optional<GridShape> new_grid,
                           std::vector<ConfigLength>& changes);

}  // namespace posemb::detail
