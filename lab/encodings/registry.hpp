// lab/encodings/registry.hpp: every positional encoding of the lab, by name, and the checks of a
// model's settings that depend on its encoding.
//
//   for (const lab::EncodingSpec* e : lab::encodings()) ...        // --help order
//   const lab::EncodingSpec& e = lab::find_encoding(cfg.pe);       // ConfigError otherwise
//   const lab::EncodingSpec* r = lab::find_encoding_if([](const lab::EncodingSpec& e) {
//     return e.has_table && e.train_positions == lab::PositionMode::randomized;
//   });
//   lab::validate_model(cfg);                                      // fields, then the encoding's
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/encoding.hpp"

namespace posemb::lab {

// Every registered encoding, in the order --help lists them (the first is the default).
std::span<const EncodingSpec* const> encodings();
// The encoding called name; throws ConfigError (field model.pe) listing the names otherwise.
const EncodingSpec& find_encoding(std::string_view name);
// The first registered encoding's name: --pe's default.
const std::string& default_encoding_name();
// "learned, learned-randomized, ..." (for messages and --help).
std::string encoding_names();
// Every registered name, in registry order (for --pe's choices).
std::vector<std::string> encoding_name_list();
// The first registered encoding satisfying pred, or nullptr (e.g. the one with a table trained
// on randomized positions).
const EncodingSpec* find_encoding_if(bool (*pred)(const EncodingSpec&));

// Every check of a model's settings: its encoding registered, the fields
// (ModelConfig::check_fields), the learned table's rows (within limits with a table, 0 without),
// a rope scaling only for an encoding that rotates q and k, relative-position buckets exactly for
// an encoding that has them, and the encoding's own checks.
// Returns the encoding; throws ConfigError naming the fields.
const EncodingSpec& validate_model(const ModelConfig& cfg);
// The same checks against `spec` (cfg.pe must be its name), registered or not: a model built
// with an encoding of its own (lab::Model's second constructor).
const EncodingSpec& validate_model(const ModelConfig& cfg, const EncodingSpec& spec);

}  // namespace posemb::lab
