// posemb/grid_resize.hpp: vision position tables (a few prefix tokens, then an H x W grid of
// patches) resized as 2-D grids, as timm's `resample_abs_pos_embed` and Hugging Face's
// `interpolate_pos_encoding` do.
//
//   posemb::TensorFile f = posemb::read_safetensors("vit.safetensors");
//   posemb::PositionTable t = posemb::load_position_table(f, "vit.safetensors");
//   // (197, 768) read from (1, 197, 768): 1 class token + a 14 x 14 grid
//   posemb::VisionLayout v = posemb::vision_layout(t, posemb::classify_table(f, t.source_tensor));
//   posemb::PositionTable big = posemb::resize_grid(t, v, {24, 24}, posemb::GridMethod::bicubic);
//   // big.values: (1 + 576, 768), row 0 bit for bit t's; big.stored_shape {1, 577, 768}
//   posemb::ResizedFile out = posemb::replace_position_table(f, big);   // posemb/resize.hpp
//
// The grid's rows are patches in row-major order: patch (h, w) is row prefix + h * W + w.
// Methods:
//   bicubic   torch.nn.functional.interpolate(mode="bicubic", align_corners=False): source
//             coordinate s = (o + 0.5) * in / out - 0.5, Keys' cubic with A = -0.75 (PyTorch's),
//             the four taps clamped to the border; separable, width first
//   bilinear  interpolate(mode="bilinear", align_corners=False): the same s, clamped below at 0,
//             the upper tap clamped to the last row / column
//   sincos    the new grid is the 2-D sine-cosine table of MAE (posemb/sincos_2d.hpp), whatever
//             the old grid held
// Every method keeps the prefix rows bit for bit and works up, down and between non-square
// grids. Arithmetic is in double, rounded to float once (PyTorch's float32 kernel differs by a
// few float ulps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb {

enum class GridMethod : std::uint8_t { bicubic, bilinear, sincos };

// The most rows a resized grid table may have, prefix tokens included (so a 4096x4096 grid, 2^24
// cells, fits no prefix token); `posemb resize --to` has the same bound.
inline constexpr std::size_t kMaxGridTableRows = std::size_t{1} << 24;

// "bicubic", "bilinear", "sincos".
std::string_view grid_method_name(GridMethod method) noexcept;
// The method called name; throws std::invalid_argument listing the names otherwise.
GridMethod parse_grid_method(std::string_view name);

// A grid of patches: height rows of width patches.
struct GridShape {
  std::size_t height = 0;
  std::size_t width = 0;
  // height * width; throws std::length_error naming the grid when the product does not fit a
  // std::size_t (a 2^63 + 1 x 2 grid is not 2 cells).
  std::size_t cells() const;
  bool operator==(const GridShape&) const = default;
};

// "24x24" (or "24X24"): both sides whole numbers in [1, 65536]. Throws std::invalid_argument
// quoting the text otherwise.
GridShape parse_grid_shape(std::string_view text);
// "24x24".
std::string grid_shape_string(GridShape grid);

// The grid (from.cells(), C) resized to (to.cells(), C) by bicubic or bilinear (see above),
// written over out. Throws std::invalid_argument when grid's or out's rows do not match the
// shapes, their columns differ, a shape has no cells, out shares memory with grid, or method is
// sincos (not an interpolation); std::length_error when a shape's cells (or the intermediate
// grid's values) do not fit a 64-bit size; MemoryLimitExceeded when the intermediate grid (from
// height x to width x C doubles) is over the memory budget.
void interpolate_grid(MatrixView<const float> grid,  // (from.height * from.width, C)
                      GridShape from,
                      MatrixView<float> out,  // (to.height * to.width, C), written over
                      GridShape to, GridMethod method);

// What the tensor's name says about a table.
enum class TableKind : std::uint8_t {
  sequence,  // a 1-D table of token positions (GPT-2, BERT, RoBERTa, BART, CLIP text, Whisper)
  vision,    // prefix tokens and a grid of patches (ViT, DeiT, CLIP vision, timm pos_embed)
  unknown,   // a name posemb does not know
};

struct TableClass {
  TableKind kind = TableKind::unknown;
  std::size_t prefix_tokens = 0;  // for vision: the tokens before the grid the name implies
  std::string family = {};        // "ViT", "DeiT (distilled)", "CLIP vision", "GPT-2", ...
};

// Classifies the table called tensor_name in file by its name (and, for ViT/DeiT, by the
// class and distillation tokens stored beside it): CLIP vision (HF vision_model.*, OpenAI
// visual.positional_embedding) 1 prefix token; HF ViT / MAE (*embeddings.position_embeddings,
// 3-D) 1, DeiT (a distillation_token beside it) 2; timm pos_embed 1 with a cls_token, 2 with a
// dist_token too, 0 without. Looks at names and shapes only.
TableClass classify_table(const TensorFile& file, std::string_view tensor_name);

// A vision table's layout: prefix rows, then the grid.
struct VisionLayout {
  std::size_t prefix_tokens = 0;
  GridShape grid = {};
  std::string how = {};  // "1 prefix token (ViT, by the tensor's name), a 14x14 grid"
};

// Options that override what classify_table and the shape say.
struct VisionLayoutOptions {
  std::optional<std::size_t> prefix_tokens = std::nullopt;  // the tokens before the grid
  std::optional<GridShape> from_grid = std::nullopt;  // the stored grid, when it is not square
};

// The layout of table (rows = prefix + grid cells): prefix tokens from options, else from
// kind; the grid from options.from_grid, else the square of the remaining rows. Throws
// std::invalid_argument in one line when the table is classified as a sequence table (a 1-D
// table has no grid), when an unknown table comes without options.prefix_tokens, when the
// rows left after the prefix are not a perfect square (naming a prefix that would fit), and
// when from_grid and the prefix do not add up to the rows.
VisionLayout vision_layout(const PositionTable& table, const TableClass& kind,
                           const VisionLayoutOptions& options = {});

// The layout of a table that is to have `rows` rows with layout's prefix: the square grid of
// rows - prefix cells. Throws std::invalid_argument, with the reason and the nearest rows that
// would be square, when rows <= prefix or rows - prefix is not a perfect square.
GridShape square_grid_for_rows(std::size_t rows, const VisionLayout& layout);

// table with its grid (layout.grid) resized to `to` by method: the prefix rows kept bit for
// bit, reserved_rows = layout.prefix_tokens, stored_shape's rows updated (ViT (1, N', C) stays
// 3-D, CLIP (N', C) 2-D), the resize appended to resizes (a TableResize with operation
// "resize_grid", method the grid method, positions counting grid cells, reserved_rows the
// prefix) and to provenance ("resize: bicubic grid 14x14 -> 24x24 (196 -> 576 positions), ...").
// Throws std::invalid_argument when layout does not add up to the table's rows, `to` has no cells
// or makes more than kMaxGridTableRows rows with the prefix, sincos is asked of a width that is
// not a multiple of 4, or the table holds NaN or infinity.
PositionTable resize_grid(const PositionTable& table, const VisionLayout& layout, GridShape to,
                          GridMethod method);

}  // namespace posemb
