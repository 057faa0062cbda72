// Vision tables as 2-D grids (posemb/grid_resize.hpp, posemb/sincos_2d.hpp) and Hugging Face
// checkpoint folders (posemb/checkpoint_folder.hpp). Grids are (height, width) tuples.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/memory.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/sincos_2d.hpp"

namespace posemb::python {
namespace {

using Grid = std::pair<std::size_t, std::size_t>;

GridShape grid_of(const Grid& g) {
  return {g.first, g.second};
}

std::optional<GridShape> grid_of(const std::optional<Grid>& g) {
  if (!g) return std::nullopt;
  return grid_of(*g);
}

// The table's class: from file when given, else from a file holding only the table (its name
// and stored shape; the class and distillation tokens beside it are then unknown).
TableClass class_of(const PositionTable& t, const std::shared_ptr<TensorFile>& file) {
  if (file) return classify_table(*file, t.source_tensor);
  TensorFile alone;
  const auto& v = t.values;
  std::vector<std::uint64_t> shape =
      t.stored_shape.empty() ? std::vector<std::uint64_t>{v.rows(), v.cols()} : t.stored_shape;
  alone.tensors.push_back(Tensor::view(
      t.source_tensor, DType::F32, std::move(shape),
      {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)},
      std::shared_ptr<const void>(v.data(), [](const void*) {})));  // t outlives `alone`
  return classify_table(alone, t.source_tensor);
}

VisionLayout layout_of(const PositionTable& t, const std::shared_ptr<TensorFile>& file,
                       std::optional<std::size_t> prefix_tokens,
                       const std::optional<Grid>& from_grid) {
  return vision_layout(t, class_of(t, file), {prefix_tokens, grid_of(from_grid)});
}

py::dict lengths_dict(const std::vector<ConfigLength>& ls) {
  py::dict d;
  for (const auto& l : ls) d[py::str(l.key)] = py::make_tuple(l.value, l.expected);
  return d;
}

}  // namespace

void bind_vision(py::module_& m) {
  m.def(
      "sincos_2d_position_table",
      [](std::size_t height, std::size_t width, std::size_t dim, bool class_token) {
        return array_owning(
            without_gil([&] { return sincos_2d_position_table(height, width, dim, class_token); }));
      },
      py::arg("height"), py::arg("width"), py::arg("dim"), py::arg("class_token") = false,
      R"(MAE's fixed 2-D sine-cosine table, (class_token + height * width, dim) float32: patch
(h, w) is row class_token + h * width + w; columns [0, dim/2) encode w, [dim/2, dim) encode h.)");

  m.def(
      "interpolate_grid",
      [](const py::array& grid, const Grid& from_grid, const Grid& to_grid,
         const std::string& method) {
        const auto in = matrix_in<float>(grid, "interpolate_grid", "grid");
        const GridMethod how = parse_grid_method(method);
        Matrix<float> out(
            checked_mul(to_grid.first, to_grid.second, "interpolate_grid", "to_grid's cells"),
            in.cols());
        without_gil(
            [&] { interpolate_grid(in, grid_of(from_grid), out.view(), grid_of(to_grid), how); });
        return array_owning(std::move(out));
      },
      py::arg("grid"), py::arg("from_grid"), py::arg("to_grid"), py::arg("method") = "bicubic",
      R"(grid (H * W, C) float32, patches in row-major order, resized to (H2 * W2, C) as
torch.nn.functional.interpolate(mode=method, align_corners=False) does; method "bicubic" or
"bilinear".)");

  m.def(
      "vision_layout",
      [](const PositionTable& table, const std::shared_ptr<TensorFile>& file,
         std::optional<std::size_t> prefix_tokens, const std::optional<Grid>& from_grid) {
        const VisionLayout v = layout_of(table, file, prefix_tokens, from_grid);
        return py::make_tuple(v.prefix_tokens, Grid{v.grid.height, v.grid.width}, v.how);
      },
      py::arg("table"), py::arg("file") = py::none(), py::arg("prefix_tokens") = py::none(),
      py::arg("from_grid") = py::none(),
      R"((prefix_tokens, (height, width), how) of a vision table: the prefix tokens from its name
(ViT, CLIP vision 1; DeiT distilled 2; pass the TensorFile it came from so that class and
distillation tokens are seen) or prefix_tokens, the grid square or from_grid. Raises ValueError
for a 1-D table or rows that do not fit.)");

  m.def(
      "resize_grid",
      [](const PositionTable& table, const Grid& grid, const std::string& method,
         std::optional<std::size_t> prefix_tokens, const std::optional<Grid>& from_grid,
         const std::shared_ptr<TensorFile>& file) {
        const VisionLayout v = layout_of(table, file, prefix_tokens, from_grid);
        const GridMethod how = parse_grid_method(method);
        return without_gil([&] { return posemb::resize_grid(table, v, grid_of(grid), how); });
      },
      py::arg("table"), py::arg("grid"), py::arg("method") = "bicubic",
      py::arg("prefix_tokens") = py::none(), py::arg("from_grid") = py::none(),
      py::arg("file") = py::none(),
      R"(The vision table with its grid resized to grid = (height, width): the prefix rows kept
bit for bit, the grid by "bicubic" or "bilinear" (torch's interpolate, align_corners=False) or
"sincos" (MAE's fixed table); the stored shape kept ((1, N', C) for ViT, (N', C) for CLIP).)");

  py::class_<CheckpointFolder, std::shared_ptr<CheckpointFolder>>(
      m, "CheckpointFolder",
      R"(A Hugging Face checkpoint folder as read by read_checkpoint_folder: config.json and
model.safetensors or the shards of model.safetensors.index.json.)")
      .def_readonly("dir", &CheckpointFolder::dir)
      .def_readonly("shards", &CheckpointFolder::shards)
      .def_readonly("table_shard", &CheckpointFolder::table_shard)
      .def_readonly("table_tensor", &CheckpointFolder::table_tensor)
      .def_readonly("other_files", &CheckpointFolder::other_files)
      .def_readonly("index_file", &CheckpointFolder::index_file)
      .def_property_readonly(
          "file",
          [](const CheckpointFolder& f) { return std::make_shared<TensorFile>(f.table_file); },
          "The shard holding the table, as a TensorFile.")
      .def(
          "table",
          [](const CheckpointFolder& f) {
            return without_gil(
                [&] { return load_position_table(f.table_file, f.table_path(), f.table_tensor); });
          },
          "The position table (a PositionTable).")
      .def(
          "check_config",
          [](const CheckpointFolder& f, std::optional<std::size_t> rows) {
            const std::size_t r =
                rows ? *rows
                     : load_position_table(f.table_file, f.table_path(), f.table_tensor)
                           .values.rows();
            const ConfigCheck c = check_checkpoint_config(f.config_text, f.dir + "/config.json",
                                                          f.table_file, f.table_tensor, r);
            py::dict d;
            d["family"] = c.family;
            d["lengths"] = lengths_dict(c.lengths);
            d["note"] = c.note;
            d["agrees"] = c.agrees();
            return d;
          },
          py::arg("rows") = py::none(),
          R"({"family", "lengths": {key: (value, expected)}, "note", "agrees"}: whether config.json's
length keys agree with the table (or with a table of `rows` rows).)");

  m.def(
      "read_checkpoint_folder",
      [](const std::string& dir, const std::optional<std::string>& tensor_name) {
        return std::make_shared<CheckpointFolder>(
            without_gil([&] { return read_checkpoint_folder(dir, tensor_name); }));
      },
      py::arg("dir"), py::arg("tensor_name") = py::none(),
      R"(Reads a checkpoint folder and finds its position table in whichever shard holds it.
Raises FileFormatError for a missing shard, a shard outside the folder, a symbolic link, a
tensor in two shards, a config.json that is not a JSON object.)");

  m.def(
      "write_checkpoint_folder",
      [](const CheckpointFolder& folder, const PositionTable& table, const std::string& out_dir,
         const std::optional<Grid>& grid, bool force) {
        const FolderWriteReport r = without_gil([&] {
          const ResizedFile shard = replace_position_table(folder.table_file, table);
          return posemb::write_checkpoint_folder(folder, shard, table.values.rows(), grid_of(grid),
                                                 out_dir, force);
        });
        py::dict d;
        d["config_changes"] = lengths_dict(r.config_changes);
        d["old_total_size"] = r.old_total_size;
        d["new_total_size"] = r.new_total_size;
        d["copied"] = r.copied;
        d["table_shard"] = r.table_shard;
        return d;
      },
      py::arg("folder"), py::arg("table"), py::arg("out_dir"), py::arg("grid") = py::none(),
      py::arg("force") = false,
      R"(Writes folder to out_dir with table (a resize of its table) in place: the table's shard
rewritten, config.json's length keys updated (grid: the new (height, width) of a vision table),
the index's total_size updated, every other file copied byte for byte; made as a temporary
sibling and renamed. Returns {"config_changes": {key: (old, new)}, "old_total_size",
"new_total_size", "copied", "table_shard"}.)");
}

}  // namespace posemb::python
