// src/io/rope_config_json.hpp (internal): config.json as text and as JSON, strictly, for the
// reader (rope_config.cpp) and the editor (rope_config_edit.cpp) of posemb/rope_config.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace posemb::detail {

// Key order kept, so that an edited config lists its keys as the original did.
using ConfigJson = nlohmann::ordered_json;

// The file's bytes (a regular file of at most 16 MiB). Throws FileFormatError or
// std::system_error.
std::string read_config_text(const std::string& path);

// Parses config JSON text: a syntax error, a NUL byte, a key twice in one object or a top level
// that is not an object is a FileFormatError naming `source`.
ConfigJson parse_config_json(std::string_view text, std::string_view source);

}  // namespace posemb::detail
