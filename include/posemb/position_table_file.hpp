// posemb/position_table_file.hpp: a position table as a file, found by name in a checkpoint.
//
//   // A RoBERTa checkpoint: 514 rows, the first 2 reserved (padding offset).
//   posemb::PositionTable t = posemb::load_position_table("roberta.safetensors");
//   t.source_tensor;      // "roberta.embeddings.position_embeddings.weight" (found by name)
//   t.how_found;          // "common name '*embeddings.position_embeddings.weight'"
//   t.reserved_rows = 2;  // known to the user; posemb's own files record it
//   t.usable();           // rows [2, 514): position p is row 2 + p
//   posemb::save_position_table("roberta-pe.safetensors", t);   // records reserved rows etc.
//   posemb::likely_reserved_rows(t.values);   // 2: row 1 is all zeros (table_analysis.hpp)
//
// A ViT-style table stored as (1, N, C) is read as the (N, C) table (leading 1s squeezed;
// stored_shape keeps [1, N, C], and save_position_table writes it back in that form).
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
//   posemb.provenance       how the file was made, for people (resizes append to it)
//   posemb.resizes          the resizes as data (JSON; posemb/table_provenance.hpp)
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/table_provenance.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb {

// The name patterns tried in order when no name is given: an exact name, or a suffix when the
// pattern starts with '*'.
// GPT-2, GPT-2 (with prefix), BERT / RoBERTa, HF CLIP (text_model. and vision_model.), BART /
// Whisper, OpenAI CLIP / Whisper, HF ViT / DeiT (a (1, N, C) parameter), timm ViT (1, N, C).
inline constexpr std::array<std::string_view, 8> kCommonTableNames = {
    "wpe.weight",
    "transformer.wpe.weight",
    "*embeddings.position_embeddings.weight",
    "*embeddings.position_embedding.weight",
    "*embed_positions.weight",
    "*positional_embedding",
    "*embeddings.position_embeddings",
    "*pos_embed"};

// A position table and what is known about it.
struct PositionTable {
  Matrix<float> values = {};      // (reserved_rows + positions, dim)
  std::size_t reserved_rows = 0;  // leading rows that are not positions
  std::optional<std::size_t> training_length =
      std::nullopt;                       // the length it was trained at, if known
  std::string initializer = {};           // how it was initialized, if known ("" if not)
  std::string provenance = {};            // how this file was made, for people ("" if unknown)
  std::vector<TableResize> resizes = {};  // its resizes, oldest first (table_provenance.hpp)
  std::string source_file = {};           // the file it was loaded from
  std::string source_tensor = {};         // the tensor name in that file
  std::string how_found = {};             // why that tensor was chosen
  DType dtype = DType::F32;               // the dtype it was stored in
  // The tensor's shape in the file: {rows, dim}, or with leading 1s ({1, rows, dim}, ViT) that
  // were squeezed on loading. Empty for a table made in memory (written as {rows, dim}).
  std::vector<std::uint64_t> stored_shape = {};
  // True when reserved_rows came from the file's posemb.reserved_rows metadata (see
  // unstated_reserved_rows, posemb/table_analysis.hpp).
  bool reserved_rows_recorded = false;

  // Number of positions: rows after the reserved ones. Throws std::out_of_range naming both
  // when reserved_rows is past the rows (the count would wrap around).
  std::size_t positions() const {
    if (reserved_rows > values.rows()) {
      throw std::out_of_range("PositionTable: reserved_rows " + std::to_string(reserved_rows) +
                              " is past the table's " + std::to_string(values.rows()) + " rows");
    }
    return values.rows() - reserved_rows;
  }
  // The rows that are positions: position p is row reserved_rows + p. Throws like positions().
  // A view into the table: not of a temporary table (`load_position_table(p).usable()` would
  // dangle at the end of the statement, so it does not compile).
  MatrixView<const float> usable() const& {
    return values.cview().subrows(reserved_rows, positions());
  }
  void usable() const&& = delete;
};

// Loads the position table of a .safetensors or .npy file (chosen by content, not extension;
// the file is opened once and only the table's bytes are read). The table must be 2-D floats
// (F16, BF16, F32, F64; held as float, F64 rounded to nearest), or 2-D after squeezing leading
// dimensions of size 1 ((1, N, C) as ViT stores it), with at least one column, and every value
// finite. Throws FileFormatError naming the file for a malformed file, for no match
// or several matches (listing them), for a table that is not 2-D floats, has no columns or
// holds NaN or infinity (naming the tensor, row and column), and for posemb metadata that does
// not fit the table; MemoryLimitExceeded when the table does not fit the memory budget.
PositionTable load_position_table(const std::string& path,
                                  const std::optional<std::string>& tensor_name = std::nullopt);
// The same from a file already read (read_tensor_file), named path in messages: the table is
// found and converted from it without opening the file again.
PositionTable load_position_table(const TensorFile& file, const std::string& path,
                                  const std::optional<std::string>& tensor_name = std::nullopt);

// The tensor name the lookup would choose in file (see load_position_table), with how_found
// set to the reason. Only names are looked at, never values. Throws FileFormatError naming path
// when there is no unique choice.
std::string find_position_tensor(const TensorFile& file, const std::string& path,
                                 const std::optional<std::string>& tensor_name,
                                 std::string* how_found = nullptr);

// Saves the table, atomically, in stored_shape's form (leading 1s kept; (rows, dim) when
// empty). A .npy path stores every row, the reserved ones included, and no metadata (.npy
// cannot record reserved rows: a reader must be told them again); any other path is written as
// safetensors with the posemb.* metadata, tensor name source_tensor (or "position_embeddings"
// when empty) and dtype `dtype` (default: the table's dtype).
void save_position_table(const std::string& path, const PositionTable& table,
                         std::optional<DType> dtype = std::nullopt);

// The table as a tensor named source_tensor (or "position_embeddings") in stored_shape's form,
// dtype `dtype` (a float dtype). Throws std::invalid_argument for a non-float dtype or a
// stored_shape that does not hold (rows, dim).
Tensor position_table_tensor(const PositionTable& table, DType dtype);

}  // namespace posemb
