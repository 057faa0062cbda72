// tools/posemb/files/vision_folder.hpp: the parts of `posemb resize` and `posemb inspect` for
// vision tables (2-D grids) and Hugging Face checkpoint folders.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "posemb/checkpoint_folder.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

namespace posemb::cli {

// What `posemb resize` was asked, as far as grids and folders are concerned.
struct GridResizeRequest {
  std::string path;    // a file or a checkpoint folder
  std::string out;     // a file, or a folder when path is one
  std::string method;  // "" when not given
  std::string tensor;
  std::string dtype;
  std::size_t to = 0;  // 0 when not given
  std::optional<std::size_t> reserved_rows;
  std::optional<std::size_t> prefix_tokens;
  std::optional<std::string> grid;       // --grid HxW
  std::optional<std::string> from_grid;  // --from-grid HxW
  bool force = false;
  bool table_only = false;
  ResizeOptions resize;
};

// Runs the resize when it is one of a folder, a --grid / --prefix-tokens / --from-grid request
// or a vision table (returns true); returns false, having done nothing, for a 1-D table in a
// file, which cmd_resize.cpp handles. Throws UsageError for flags that do not fit the table.
bool resize_grid_or_folder(const GridResizeRequest& request);

// True when path names a directory.
bool is_folder(const std::string& path);

// The table of a checkpoint folder, for `posemb inspect DIR`.
struct FolderTable {
  CheckpointFolder folder;
  PositionTable table;
};
FolderTable load_folder_table(const std::string& dir, const std::string& tensor);

// The prefix tokens (class, distillation) of a vision table, which `resize --grid` records as
// its reserved rows; nullopt for a 1-D table, a .npy file or a table without a grid layout.
std::optional<std::size_t> vision_prefix_rows(const PositionTable& table, const TensorFile& file);

// The lines `posemb inspect` adds: the grid of a vision table, and for a folder whether its
// config.json agrees with the table.
void print_vision_and_config(const PositionTable& table, const TensorFile& file,
                             const CheckpointFolder* folder);

}  // namespace posemb::cli
