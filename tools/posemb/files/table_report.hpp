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

// The side of inspect's heatmap of `rows` positions drawn at most max_plot to a side: every
// ceil(rows / max_plot)-th position (0 for no rows).
std::size_t heatmap_side(std::size_t rows, std::size_t max_plot);

// The most multiply-adds `posemb inspect` takes on (a few minutes): 8192 positions of 16384
// columns plotted are 1.1e12.
inline constexpr double kInspectMaxWork = 2e12;
// inspect's multiply-adds on a table of rows x dim: the norms and the distance profile (rows x
// dim x (log2 rows + 2)) and, with a heatmap of side n (0: none), its cosine similarities
// (n^2 x dim); and the words for it ("the table's 8192 rows of 30000 columns, with a heatmap of
// 8192 x 8192 positions,").
double inspect_work(std::size_t rows, std::size_t dim, std::size_t heatmap_side);
std::string inspect_work_text(std::size_t rows, std::size_t dim, std::size_t heatmap_side);

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
