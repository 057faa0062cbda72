// lab/train/checkpoint_table.hpp: a lab checkpoint with its learned position table resized, the
// lab's side of `posemb resize` (the library resizes the table and keeps every other tensor; the
// lab keeps its run settings true to the new table).
//
//   posemb::TensorFile f = posemb::read_tensor_file("run/checkpoint.safetensors");
//   posemb::FileResizeRequest req;                  // posemb/resize.hpp
//   req.output = "run/long.safetensors";
//   req.positions = 64;
//   req.method = posemb::ResizeMethod::interpolate;
//   if (lab::is_lab_checkpoint(f.metadata)) {
//     posemb::FileResize r = lab::resize_checkpoint_table(f, "run/checkpoint.safetensors", req);
//     lab::table_fit(f.metadata, r.table.values.rows())->train_len;  // copy: 31 (2 n + 2 <= 64)
//   }
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "posemb/resize.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::lab {

// True for the metadata of a lab checkpoint (it holds the lab's run settings).
bool is_lab_checkpoint(const Metadata& metadata);

// posemb::resize_file for a lab checkpoint: the table resized and the file written with it,
// where a whole-file output also records the new table's rows as its run settings'
// model.max_seq_len (settings that do not parse are left as they were: the lab refuses them
// when the file is used). The optimizer's moments keep the old table's shape (the result is a
// start for `posemb train --init-from`, not for --resume). Throws as posemb::plan_file_resize;
// nothing is written then.
posemb::FileResize resize_checkpoint_table(const TensorFile& checkpoint, const std::string& path,
                                           const posemb::FileResizeRequest& request);

// What a table of table_rows rows holds of a lab checkpoint's task (the task of its run settings,
// posemb.lab.run): the longest train_len whose rows fit (0 when none does) and the task's length
// rule, "2 n + 2" (tokens of a row of length n). nullopt when the settings do not parse or name
// no registered task.
struct TableFit {
  std::size_t train_len = 0;
  std::string length_rule;
};
std::optional<TableFit> table_fit(const Metadata& metadata, std::size_t table_rows);

}  // namespace posemb::lab
