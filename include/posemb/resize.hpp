// posemb/resize.hpp: longer or shorter position tables, made from a trained one.
//
//   posemb::PositionTable roberta = posemb::load_position_table("roberta.safetensors");
//   roberta.reserved_rows = 2;                                           // 514 rows, 512 positions
//   auto longer = posemb::resize_table(roberta, 4096, posemb::ResizeMethod::copy);
//   // longer.values: (2 + 4096, 768); rows 0-1 unchanged; position p = old position p % 512
//
//   // The whole checkpoint with the longer table: every other tensor and the metadata kept,
//   // position-id buffers extended, lineage in posemb.provenance and posemb.resizes.
//   posemb::TensorFile f = posemb::read_safetensors("roberta.safetensors");
//   posemb::ResizedFile out = posemb::replace_position_table(f, longer);
//   posemb::write_safetensors("long.safetensors", out.tensors, out.metadata);
//
// Methods (new_positions counts positions; the reserved rows are kept in place in addition):
//   copy         tile the trained positions (Longformer: position p = old position p % old)
//   interpolate  linear along the position axis, old positions [0, n-1] mapped onto [0, N-1]
//                (first and last positions kept exactly)
//   random       keep the old positions bit for bit, draw the new ones from N(0, std), seeded
//   truncate     keep the first new_positions positions (shrinking)
//   sinusoidal   keep the old positions bit for bit; new position p is the sinusoidal encoding
//                of p (Vaswani et al.: interleaved, base 10000), scaled so that the new rows'
//                mean norm equals the old positions' mean norm
// copy, interpolate, random and sinusoidal grow (new_positions >= positions()); truncate shrinks
// (new_positions <= positions()). The result's resizes (one TableResize appended) and provenance
// text record how it was made (posemb/table_provenance.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/position_table_file.hpp"

namespace posemb {

enum class ResizeMethod : std::uint8_t { copy, interpolate, random, truncate, sinusoidal };

// Every method, in the order messages and --help list them.
inline constexpr std::array<ResizeMethod, 5> kResizeMethods = {
    ResizeMethod::copy, ResizeMethod::interpolate, ResizeMethod::random, ResizeMethod::truncate,
    ResizeMethod::sinusoidal};

// "copy", "interpolate", "random", "truncate", "sinusoidal".
std::string_view resize_method_name(ResizeMethod method) noexcept;
// The method called name; throws std::invalid_argument listing the names otherwise.
ResizeMethod parse_resize_method(std::string_view name);

// Options of the random method.
struct ResizeOptions {
  std::string initializer = "normal";  // new rows: any Initializer::parse name
  double stddev = 0.02;                // its standard deviation (GPT-2's initializer range)
  std::uint64_t seed = 0;              // same seed, same rows
};

// A new table with new_positions positions made from table by method. Throws
// std::invalid_argument when the method does not fit the direction (growing vs shrinking),
// new_positions is 0, the options are invalid, or the table holds NaN or infinity (the message
// names the file, tensor, row and column).
PositionTable resize_table(const PositionTable& table, std::size_t new_positions,
                           ResizeMethod method, const ResizeOptions& options = {});

// A whole file with `table` in place of its own (the tensor called table.source_tensor).
struct ResizedFile {
  // The file's tensors in their order, the table replaced (in table.stored_shape's form, dtype
  // as asked). Integer buffers of the table's module whose last dimension is the old table's
  // rows (and whose other dimensions are 1) are extended to the new rows: 0, 1, 2, ... (BERT's,
  // RoBERTa's, CLIP's position_ids) continues counting; a constant (BERT's token_type_ids)
  // stays constant. Every other tensor is the input's, bytes unchanged.
  std::vector<Tensor> tensors = {};
  // The file's metadata with posemb.tensor, posemb.reserved_rows and posemb.provenance (the
  // table's lineage) set from table, posemb.training_length when table records one.
  Metadata metadata = {};
  // The extended buffers, "name: [1, 512] -> [1, 1024], 0, 1, 2, ... continued".
  std::vector<std::string> extended = {};
  // Tensors kept as they were although they carry the old length, names only: states of the
  // table (a name ending in "." + the table's name with its old shape, e.g. an optimizer's
  // moments), tensors with two dimensions of the old length (GPT-2's (1, 1, L, L) attn.bias
  // masks), and integer buffers of the old length that are neither counting nor constant. A
  // reader of the file may have to rebuild them.
  std::vector<std::string> kept_with_old_length = {};
};

// The file with table (a resize of the file's own table, found under table.source_tensor)
// replacing its table, written in dtype (default: table.dtype). Throws std::invalid_argument
// when the file has no tensor table.source_tensor, or when that tensor and table differ in
// width or leading dimensions; MemoryLimitExceeded over the memory budget.
ResizedFile replace_position_table(const TensorFile& file, const PositionTable& table,
                                   std::optional<DType> dtype = std::nullopt);

// ---- A file's table resized and written: `posemb resize` in one call ----
//
//   posemb::FileResizeRequest req;
//   req.output = "long.safetensors";
//   req.positions = 2048;
//   req.method = posemb::ResizeMethod::interpolate;
//   posemb::FileResize r = posemb::resize_file(posemb::read_tensor_file("bert.safetensors"),
//                                              "bert.safetensors", req);
//   r.whole_file;            // true: every tensor of the input, the table replaced
//   r.table.positions();     // 2048
//   r.file.extended;         // "bert.embeddings.position_ids: [1, 512] -> [1, 2048], ..."

// What to resize and where to write it (the flags of `posemb resize`).
struct FileResizeRequest {
  std::string output = {};                           // the file to write (.npy: the table alone)
  std::optional<std::string> tensor = std::nullopt;  // the table's name (default: found by name)
  std::optional<std::size_t> reserved_rows =
      std::nullopt;           // default: the file's posemb.reserved_rows, or 0
  std::size_t positions = 0;  // positions of the result (reserved rows extra)
  ResizeMethod method = ResizeMethod::copy;
  ResizeOptions options = {};                 // random: the new rows' initializer, std, seed
  std::optional<DType> dtype = std::nullopt;  // of the written table (default: as stored)
  bool table_only = false;                    // the table alone, not the whole file
};

// A resize of a file's table, ready to write (plan_file_resize) or written (resize_file).
struct FileResize {
  std::string output = {};        // where it goes
  PositionTable table = {};       // the new table (source_tensor, how_found: the input's)
  std::size_t old_positions = 0;  // the input table's positions and rows
  std::size_t old_rows = 0;
  // likely_reserved_rows of the input table when neither the request nor the file gave its
  // reserved rows and its leading rows look reserved (unstated_reserved_rows): the table was
  // resized as if they were positions. nullopt otherwise.
  std::optional<std::size_t> unstated_reserved_rows = std::nullopt;
  // True: the whole input file with the new table (`file`); false: the table alone (asked
  // for, a .npy output, or a .npy input), with posemb's metadata unless .npy.
  bool whole_file = false;
  ResizedFile file = {};                      // whole_file: the tensors and metadata to write
  std::optional<DType> dtype = std::nullopt;  // the table's written dtype (default: table.dtype)
};

// Thrown by plan_file_resize when the request's reserved_rows exceed the table's rows: a
// mistake of the request, not of the file (`posemb resize` reports it as a usage error).
class ReservedRowsOutOfRange : public std::invalid_argument {
 public:
  ReservedRowsOutOfRange(std::size_t requested, std::size_t rows);
  std::size_t requested() const noexcept { return requested_; }
  std::size_t rows() const noexcept { return rows_; }

 private:
  std::size_t requested_, rows_;
};

// The resize request made on file (read from path, named so in messages), nothing written:
// the table loaded (load_position_table), its reserved rows set from the request, resized
// (resize_table), and for a whole-file output the file with the table replaced
// (replace_position_table). Throws std::invalid_argument for a request that does not fit the
// table (ReservedRowsOutOfRange; what resize_table refuses), FileFormatError for a file
// without a usable table, MemoryLimitExceeded over the memory budget.
FileResize plan_file_resize(const TensorFile& file, const std::string& path,
                            const FileResizeRequest& request);

// Writes a planned resize to resize.output, atomically: the whole file as safetensors, or the
// table alone (save_position_table).
void write_file_resize(const FileResize& resize);

// plan_file_resize, then write_file_resize: nothing is written when planning throws.
FileResize resize_file(const TensorFile& file, const std::string& path,
                       const FileResizeRequest& request);

}  // namespace posemb
