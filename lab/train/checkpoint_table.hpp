// lab/checkpoint_table.hpp: a lab checkpoint with its learned position table resized, the lab's
// side of `posemb resize` (the library resizes the table and keeps every other tensor; the lab
// keeps its run settings true to the new table).
//
//   posemb::TensorFile f = posemb::read_tensor_file("run/checkpoint.safetensors");
//   posemb::FileResizeRequest req;                  // posemb/resize.hpp
//   req.output = "run/long.safetensors";
//   req.positions = 64;
//   req.method = posemb::ResizeMethod::interpolate;
//   if (lab::is_lab_checkpoint(f.metadata)) {
//     posemb::FileResize r = lab::resize_checkpoint_table(f, "run/checkpoint.safetensors", req);
//     lab::longest_train_len(r.table.values.rows());  // 31: the train_len whose inputs fit 64 rows
//   }
#pragma once

#include <cstddef>
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

// The longest train_len whose inputs (input_len: 2 n + 2 tokens) fit a table of table_rows rows;
// 0 when none does.
std::size_t longest_train_len(std::size_t table_rows);

}  // namespace posemb::lab
