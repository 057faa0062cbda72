// src/io/table_metadata.hpp (internal): the posemb.* metadata keys that describe a position
// table (posemb/position_table_file.hpp), written in one place for save_position_table and
// replace_position_table.
#pragma once

#include <string>

#include "posemb/position_table_file.hpp"
#include "posemb/table_provenance.hpp"

namespace posemb::detail {

// Sets m's posemb.tensor (tensor_name), posemb.reserved_rows, and, when table knows them,
// posemb.training_length, posemb.initializer, posemb.provenance and posemb.resizes (removed
// when table has no resizes, so a replaced table's old record does not stay behind).
inline void set_table_metadata(Metadata& m, const PositionTable& table,
                               const std::string& tensor_name) {
  m["posemb.tensor"] = tensor_name;
  m["posemb.reserved_rows"] = std::to_string(table.reserved_rows);
  if (table.training_length) m["posemb.training_length"] = std::to_string(*table.training_length);
  if (!table.initializer.empty()) m["posemb.initializer"] = table.initializer;
  if (!table.provenance.empty()) m[std::string(kProvenanceKey)] = table.provenance;
  if (table.resizes.empty()) {
    m.erase(std::string(kResizesKey));
  } else {
    m[std::string(kResizesKey)] = resizes_json(table.resizes);
  }
}

}  // namespace posemb::detail
