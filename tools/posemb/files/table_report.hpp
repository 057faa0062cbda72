// tools/posemb/files/table_report.hpp: what the file commands (inspect, resize, convert) print
// about a position table. The analysis itself is the library's (posemb/table_analysis.hpp).
#pragma once

#include <cstddef>
#include <string>

#include "posemb/matrix_view.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

namespace posemb::cli {

// The (n, n) cosine-similarity heatmap of rows 0, step, 2 step, ... of unit (rows, dim; the unit
// rows of the table: posemb::unit_rows), n = ceil(rows / step), drawn by viz::heatmap_png (blue
// -1, white 0, red +1, position ticks, a colour bar), written to path atomically. The title
// names the tensor and the file it came from ("wpe.weight in gpt2.safetensors"). Returns n.
std::size_t write_cosine_heatmap(MatrixView<const float> unit, std::size_t step,
                                 const std::string& path, const std::string& tensor,
                                 const std::string& file);

// True when an output path ends in ".npy" (the file commands write .npy there, safetensors
// elsewhere).
bool ends_with_npy(const std::string& path);

// Prints "posemb: warning: TEXT" on stderr (a warning is not an error: the command goes on).
void warn(const std::string& text);

// The words for posemb::unstated_reserved_rows(table) == k: "row 1 of 'name' is all zeros, so
// its first 2 rows look reserved (...) and the file does not say".
std::string looks_reserved(const PositionTable& table, std::size_t k);

// The line explaining that a (1, N, C) table was read as (N, C) and is written back in its
// stored form, or "" for a 2-D table.
std::string squeeze_note(const PositionTable& table);

// What `posemb resize` says about a resize it wrote: the table, the file written, the extended
// buffers on stdout; the warnings (unstated reserved rows, tensors kept with the old length,
// reserved rows a .npy cannot record) on stderr. lab_checkpoint: the input was a lab checkpoint;
// table_metadata: the input had posemb's table metadata (then no config note).
void print_resize_report(const FileResize& r, bool lab_checkpoint, bool table_metadata,
                         bool table_only_asked);

}  // namespace posemb::cli
