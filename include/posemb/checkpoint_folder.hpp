// posemb/checkpoint_folder.hpp: a Hugging Face checkpoint folder (config.json beside
// model.safetensors, or beside shards listed by model.safetensors.index.json), read and
// written whole with a resized position table.
//
//   posemb::CheckpointFolder in = posemb::read_checkpoint_folder("gpt2/");
//   posemb::PositionTable t = posemb::load_position_table(in.table_file, in.table_path());
//   posemb::PositionTable longer = posemb::resize_table(t, 2048, posemb::ResizeMethod::copy);
//   posemb::ResizedFile shard = posemb::replace_position_table(in.table_file, longer);
//   posemb::FolderWriteReport r =
//       posemb::write_checkpoint_folder(in, shard, longer.values.rows(), std::nullopt, "gpt2-2k/");
//   // gpt2-2k/: config.json with n_positions = n_ctx = 2048, the index's total_size updated, the
//   // table's shard rewritten, every other file (shards, tokenizer, ...) copied byte for byte
//
// Reading: the folder must hold config.json (a JSON object) and model.safetensors, or else
// model.safetensors.index.json whose weight_map names shards in the folder itself (a plain file
// name: no '/', no "..", not hidden). Every shard must be a regular file (a symbolic link is
// refused), every tensor the index names must be in its shard, and no tensor may be in two
// shards. Any symbolic link or special file anywhere in the folder is refused (copy the
// folder with `cp -rL` first). Every problem throws FileFormatError naming the file, before
// anything is written.
//
// Config keys kept in step with the table's rows (R) and, for a vision table, its grid (H x W):
// every key a loader reads for the length, checked and written (a key marked "when present" is
// left alone when the config does not have it):
//   GPT-2 (n_positions in config)    n_positions = R, and n_ctx = R and max_position_embeddings
//                                    = R when present (GPT2Config reads max_position_embeddings
//                                    as n_positions, after it)
//   BART, mBART, OPT, PLBart, MVP    max_position_embeddings = R - 2 (their 2 offset rows)
//   Whisper (max_source_positions)   encoder: max_source_positions = R; decoder:
//                                    max_target_positions = R
//   CLIP (text_config/vision_config) text: text_config.max_position_embeddings = R; vision:
//                                    vision_config.image_size = H * patch_size; the same keys of
//                                    text_config_dict and vision_config_dict when present
//                                    (CLIPConfig applies them over the others)
//   ViT, DeiT, other vision tables   image_size = H * patch_size (square grids), else
//                                    [H * patch_size, W * patch_size]
//   anything else (BERT, RoBERTa...) max_position_embeddings = R (RoBERTa's 2 reserved rows
//                                    are in both)
// A vision table's new grid must make its rows with the prefix tokens its name gives (a 24x24
// grid for a ViT table of 577 rows), and each side of image_size must be at most 2^53 (a JSON
// number read as a double holds it exactly): otherwise std::invalid_argument, nothing written.
//
// Writing (write_checkpoint_folder, and write_new_checkpoint_folder for a folder made from
// tensors in memory): the folder is written by posemb::write_folder_atomically
// (posemb/atomic_file.hpp): made as a temporary sibling of out_dir and renamed to out_dir when
// complete; on any failure the temporary is removed and out_dir is left as it was. An existing
// non-empty out_dir is refused unless `force` (then replaced whole); out_dir may not be the input
// folder, inside it or hold it (compared by identity: any spelling, symbolic links, bind mounts),
// nor a file the process has read while posemb::protect_read_files is on. The input folder is
// only read. A path with a NUL byte is refused (std::invalid_argument) before anything is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "posemb/grid_resize.hpp"
#include "posemb/resize.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb {

// A checkpoint folder as read: the names of its parts and the shard holding the table.
struct CheckpointFolder {
  std::string dir = {};                  // the folder
  std::string config_text = {};          // config.json as read (a JSON object)
  std::string index_file = {};           // "model.safetensors.index.json", or "" for a single file
  std::string index_text = {};           // that file as read
  std::vector<std::string> shards = {};  // the weight files, relative to dir, in index order
  std::string table_shard = {};          // the shard holding the table
  TensorFile table_file = {};            // that shard, read (the tensors view its mapping)
  std::string table_tensor = {};         // the table's tensor name
  std::string how_found = {};            // why that tensor was chosen
  std::vector<std::string> other_files = {};  // every other file (relative paths), copied as is

  // dir/table_shard.
  std::string table_path() const;
};

// Reads the folder (see above) and finds the position table (load_position_table's rules:
// tensor_name, else posemb.tensor metadata, else the common names) in whichever shard holds it.
CheckpointFolder read_checkpoint_folder(const std::string& dir,
                                        const std::optional<std::string>& tensor_name = {});

// One length key of config.json: its value and the value the table implies (JSON text).
struct ConfigLength {
  std::string key = {};       // "n_positions", "text_config.max_position_embeddings", "image_size"
  std::string value = {};     // in config.json ("(absent)" when it is not there)
  std::string expected = {};  // what the table's rows (and grid) imply
  bool agrees() const { return value == expected; }
};

// What config.json says about the table.
struct ConfigCheck {
  std::string family = {};                 // "GPT-2", "CLIP vision", ... (by model_type and name)
  std::vector<ConfigLength> lengths = {};  // the family's length keys
  std::string note = {};                   // why a key could not be checked ("" when all could)
  bool agrees() const;                     // every key agrees and there is no note
};

// The config's length keys for the table called tensor_name with `rows` rows. For a vision
// table (classify_table), the grid is read from image_size / patch_size and checked against
// rows with prefix_tokens (default: the ones classify_table gives). Throws FileFormatError naming
// source when config_text is not a JSON object.
ConfigCheck check_checkpoint_config(const std::string& config_text, const std::string& source,
                                    const TensorFile& file, const std::string& tensor_name,
                                    std::size_t rows,
                                    std::optional<std::size_t> prefix_tokens = std::nullopt);

// What write_checkpoint_folder did.
struct FolderWriteReport {
  std::vector<ConfigLength> config_changes = {};  // key, old value (value), new value (expected)
  std::optional<std::uint64_t> old_total_size =
      std::nullopt;  // the index's metadata.total_size, if any
  std::optional<std::uint64_t> new_total_size = std::nullopt;
  std::vector<std::string> copied = {};  // files copied byte for byte, relative to the folder
  std::string table_shard = {};          // the shard rewritten
};

// Writes in's folder to out_dir with resized (replace_position_table of in.table_file) as the
// table's shard: config.json's length keys set for new_rows rows (and new_grid for a vision
// table), the index's total_size moved by the change in tensor bytes, every other file copied.
// Throws std::invalid_argument for an out_dir that exists and is not an empty directory (unless
// force), that is not a directory, or that is the input folder or inside it;
// std::system_error for I/O failures. Nothing is left behind on failure.
FolderWriteReport write_checkpoint_folder(const CheckpointFolder& in, const ResizedFile& resized,
                                          std::size_t new_rows, std::optional<GridShape> new_grid,
                                          const std::string& out_dir, bool force = false);

// One weight file of a new checkpoint folder: its name in the folder and its tensors, in order.
struct CheckpointShard {
  std::string file = {};  // "model.safetensors", "model-00001-of-00002.safetensors"
  std::vector<Tensor> tensors = {};
};

// Writes a new checkpoint folder out_dir: config_text as config.json, each shard as a
// safetensors file with `metadata`, and, for more than one shard, model.safetensors.index.json
// (metadata.total_size: the tensors' bytes; weight_map: each tensor's file). Written as
// write_checkpoint_folder writes: a temporary sibling renamed to out_dir when complete, nothing
// left behind on failure, an existing non-empty out_dir replaced only with `force`. Throws
// FileFormatError when config_text is not a JSON object, std::invalid_argument for no shard, a
// shard name that is not a distinct plain file name ending in .safetensors, a tensor name in two
// shards, or an out_dir refused as above. Returns the files written, relative to out_dir.
std::vector<std::string> write_new_checkpoint_folder(const std::string& config_text,
                                                     const std::vector<CheckpointShard>& shards,
                                                     const Metadata& metadata,
                                                     const std::string& out_dir,
                                                     bool force = false);

}  // namespace posemb
