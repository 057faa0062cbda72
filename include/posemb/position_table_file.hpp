// posemb/position_table_file.hpp: a position table as a file, found by name in a checkpoint.
//
//   // A RoBERTa checkpoint: 514 rows, the first 2 reserved (padding offset).
//   posemb::PositionTable t = posemb::load_position_table("roberta.safetensors");
//   t.source_tensor;      // "roberta.embeddings.position_embeddings.weight" (found by name)
//   t.how_found;          // "common name '*embeddings.position_embeddings.weight'"
//   t.reserved_rows = 2;  // known to the user; posemb's own files record it
//   t.usable();           // rows [2, 514): position p is row 2 + p
//   posemb::save_position_table("roberta-pe.safetensors", t);   // records reserved rows etc.
//
// The table is looked up by `tensor_name` when given; otherwise by the posemb.tensor metadata
// of posemb's own files; otherwise by the common names of well-known models (kCommonTableNames).
// Several matches are refused with the candidate list: pass the name you mean.
//
// Metadata keys of posemb's files (safetensors `__metadata__`, all values strings):
//   posemb.tensor           the table's tensor name
//   posemb.reserved_rows    leading rows that are not positions (RoBERTa/BART: "2")
//   posemb.training_length  the sequence length the table was trained at
//   posemb.initializer      how the rows were initialized ("normal(std=0.02, seed=1)")
//   posemb.provenance       how the file was made (resizes append to it)
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb {

// The name patterns tried in order when no name is given: an exact name, or a suffix when the
// pattern starts with '*'.
inline constexpr std::array<std::string_view, 5> kCommonTableNames = {
    "wpe.weight", "transformer.wpe.weight", "*embeddings.position_embeddings.weight",
    "*embed_positions.weight", "*positional_embedding"};

// A position table and what is known about it.
struct PositionTable {
  Matrix<float> values;                        // (reserved_rows + positions, dim)
  std::size_t reserved_rows = 0;               // leading rows that are not positions
  std::optional<std::size_t> training_length;  // the length it was trained at, if known
  std::string initializer;                     // how it was initialized, if known ("" if not)
  std::string provenance;                      // how this file was made ("" if unknown)
  std::string source_file;                     // the file it was loaded from
  std::string source_tensor;                   // the tensor name in that file
  std::string how_found;                       // why that tensor was chosen
  DType dtype = DType::F32;                    // the dtype it was stored in

  // Number of positions: rows after the reserved ones.
  std::size_t positions() const noexcept { return values.rows() - reserved_rows; }
  // The rows that are positions: position p is row reserved_rows + p.
  MatrixView<const float> usable() const {
    return values.cview().subrows(reserved_rows, positions());
  }
};

// Loads the position table of a .safetensors or .npy file (chosen by content, not extension;
// the file is opened once and only the table's bytes are read). The table must be 2-D floats
// (F16, BF16, F32, F64; held as float, F64 rounded to nearest) with at least one column, and
// every value finite. Throws FileFormatError naming the file for a malformed file, for no match
// or several matches (listing them), for a table that is not 2-D floats, has no columns or
// holds NaN or infinity (naming the tensor, row and column), and for posemb metadata that does
// not fit the table; MemoryLimitExceeded when the table does not fit the memory budget.
PositionTable load_position_table(const std::string& path,
                                  const std::optional<std::string>& tensor_name = std::nullopt);

// The tensor name the lookup would choose in file (see load_position_table), with how_found
// set to the reason. Only names are looked at, never values. Throws FileFormatError naming path
// when there is no unique choice.
std::string find_position_tensor(const TensorFile& file, const std::string& path,
                                 const std::optional<std::string>& tensor_name,
                                 std::string* how_found = nullptr);

// Saves the table, atomically. A .npy path stores the values only (refused when reserved_rows
// is not 0, which .npy cannot record); any other path is written as safetensors with the
// posemb.* metadata, tensor name source_tensor (or "position_embeddings" when empty) and dtype
// `dtype` (default: the table's dtype).
void save_position_table(const std::string& path, const PositionTable& table,
                         std::optional<DType> dtype = std::nullopt);

}  // namespace posemb
