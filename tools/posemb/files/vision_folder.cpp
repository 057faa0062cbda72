// `posemb resize` on vision tables (2-D grids) and on Hugging Face checkpoint folders, and the
// lines `posemb inspect` adds for them.
#include "vision_folder.hpp"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "posemb/errors.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/safetensors.hpp"
#include "table_report.hpp"

namespace posemb::cli {
namespace {

bool is_grid_method(const std::string& m) {
  return m == "bicubic" || m == "bilinear" || m == "sincos";
}

// Runs f, turning the library's std::invalid_argument about the table's layout into a usage
// error (the remedy is a flag).
template <class F>
auto as_usage(F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("resize: ") + e.what());
  }
}

struct Resized {
  PositionTable table;
  std::optional<GridShape> grid;       // the new grid of a vision table
  std::string done;                    // what was done, for the report
  std::optional<ResizedFile> planned;  // the file with the table replaced, when planned
};

Resized resize_2d(const GridResizeRequest& q, const PositionTable& t, const TableClass& kind) {
  if (q.grid && q.to != 0) throw UsageError("resize: give --grid HxW or --to N, not both");
  if (!q.grid && q.to == 0) throw UsageError("resize: --grid HxW or --to N is required");
  if (q.prefix_tokens && q.reserved_rows && *q.prefix_tokens != *q.reserved_rows) {
    throw UsageError("resize: --prefix-tokens " + std::to_string(*q.prefix_tokens) +
                     " and --reserved-rows " + std::to_string(*q.reserved_rows) + " disagree");
  }
  VisionLayoutOptions lo;
  lo.prefix_tokens = q.prefix_tokens ? q.prefix_tokens : q.reserved_rows;
  if (q.from_grid) lo.from_grid = as_usage([&] { return parse_grid_shape(*q.from_grid); });
  const VisionLayout layout = as_usage([&] { return vision_layout(t, kind, lo); });
  if (!q.method.empty() && !is_grid_method(q.method)) {
    throw UsageError(
        "resize: tensor " + quote_untrusted(t.source_tensor) + " is a vision table (" + layout.how +
        "): its grid is resized in 2-D, --method bicubic, bilinear or sincos, not " + q.method);
  }
  const GridShape to = as_usage([&] {
    if (q.grid) return parse_grid_shape(*q.grid);
    try {
      return square_grid_for_rows(q.to, layout);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--to " + std::to_string(q.to) + " on tensor " +
                                  quote_untrusted(t.source_tensor) + " (" + layout.how +
                                  "): " + e.what());
    }
  });
  // The row cap is the flag's limit, as --to's is (checked here so that it is a usage error too).
  if (to.cells() > kMaxGridTableRows - std::min(layout.prefix_tokens, kMaxGridTableRows)) {
    throw UsageError(fmt::format(
        "resize: --grid {} with {} prefix token(s) makes {} rows; a table may have at most {} "
        "(prefix tokens included, as --to counts them)",
        grid_shape_string(to), layout.prefix_tokens, layout.prefix_tokens + to.cells(),
        kMaxGridTableRows));
  }
  const GridMethod method = q.method.empty() ? GridMethod::bicubic : parse_grid_method(q.method);
  Resized r{resize_grid(t, layout, to, method), to, "", std::nullopt};
  r.done = fmt::format("tensor {} ({}): {}; grid {} -> {} by {}, {} -> {} rows",
                       quote_untrusted(t.source_tensor), t.how_found, layout.how,
                       grid_shape_string(layout.grid), grid_shape_string(to),
                       grid_method_name(method), t.values.rows(), r.table.values.rows());
  return r;
}

// A 1-D table of a folder: the library's plan (load, reserved rows, resize, replace).
Resized resize_1d(const GridResizeRequest& q, const TensorFile& file, const std::string& path,
                  const PositionTable& found, std::optional<DType> dtype) {
  if (q.method.empty()) throw UsageError("resize: --method is required for a 1-D table");
  if (q.to == 0) throw UsageError("resize: --to N is required for a 1-D table");
  FileResizeRequest req;
  req.output = q.out;
  req.tensor = found.source_tensor;  // found across the folder's shards
  req.reserved_rows = q.reserved_rows;
  req.positions = q.to;
  req.method = parse_resize_method(q.method);
  req.options = q.resize;
  req.dtype = dtype;
  FileResize fr;
  try {
    fr = plan_file_resize(file, path, req);
  } catch (const ReservedRowsOutOfRange& e) {
    throw UsageError("resize: --reserved-rows " + std::to_string(e.requested()) +
                     " exceeds the table's " + std::to_string(e.rows()) + " rows");
  }
  if (fr.unstated_reserved_rows) {
    warn(looks_reserved(fr.table, *fr.unstated_reserved_rows) + "; resize treated all " +
         std::to_string(fr.old_rows) + " rows as positions. Pass --reserved-rows " +
         std::to_string(*fr.unstated_reserved_rows) +
         " if they are reserved, --reserved-rows 0 if they are not");
  }
  Resized r{fr.table, std::nullopt, "", std::move(fr.file)};
  r.table.how_found = found.how_found;
  r.done = fmt::format("tensor {} ({}): {} -> {} positions by {} ({} reserved rows kept)",
                       quote_untrusted(r.table.source_tensor), r.table.how_found, fr.old_positions,
                       r.table.positions(), q.method, r.table.reserved_rows);
  return r;
}

// The other position tables of the written table's shard that a changed config key governs
// too (BART's encoder and decoder share max_position_embeddings): warned about, by name.
void warn_other_tables(const std::string& out, const std::string& table,
                       const std::vector<ConfigLength>& changes) {
  const CheckpointFolder written = read_checkpoint_folder(out, table);
  for (const Tensor& other : written.table_file.tensors) {
    const auto& shape = other.shape();
    if (other.name() == table || shape.size() < 2 || !dtype_is_float(other.dtype()) ||
        classify_table(written.table_file, other.name()).kind == TableKind::unknown) {
      continue;
    }
    const ConfigCheck c =
        check_checkpoint_config(written.config_text, out + "/config.json", written.table_file,
                                other.name(), static_cast<std::size_t>(shape[shape.size() - 2]));
    for (const auto& l : c.lengths) {
      const bool changed = std::any_of(changes.begin(), changes.end(),
                                       [&](const ConfigLength& x) { return x.key == l.key; });
      if (changed && !l.agrees()) {
        warn("tensor " + quote_untrusted(other.name()) + " (" + shape_string(shape) +
             ") no longer agrees with config.json's " + l.key + " = " + l.value +
             "; resize it too (--tensor " + other.name() + ")");
      }
    }
  }
}

void write_folder(const GridResizeRequest& q, const CheckpointFolder& f, const Resized& r,
                  std::optional<DType> dtype) {
  if (q.table_only) throw UsageError("resize: --table-only writes a file, not a folder");
  const ResizedFile shard =
      r.planned ? *r.planned : replace_position_table(f.table_file, r.table, dtype);
  const FolderWriteReport w =
      write_checkpoint_folder(f, shard, r.table.values.rows(), r.grid, q.out, q.force);
  fmt::print(
      "{}\nwrote folder {}: {} rewritten (the table {} x {}), {} file(s) copied byte for "
      "byte\n",
      r.done, quote_untrusted(q.out), quote_untrusted(w.table_shard), r.table.values.rows(),
      r.table.values.cols(), w.copied.size());
  std::string changes;
  for (const auto& c : w.config_changes) {
    changes += (changes.empty() ? "" : ", ") + c.key + " " + c.value + " -> " + c.expected;
  }
  fmt::print("  config.json: {}\n", changes.empty() ? "no length key changed" : changes);
  if (w.new_total_size) {
    fmt::print("  {}: total_size {} -> {}\n", f.index_file, *w.old_total_size, *w.new_total_size);
  }
  for (const auto& e : shard.extended) fmt::print("  extended {}\n", quote_untrusted(e));
  warn_other_tables(q.out, r.table.source_tensor, w.config_changes);
}

void write_file(const GridResizeRequest& q, const TensorFile& file, const Resized& r,
                std::optional<DType> dtype) {
  if (q.force) throw UsageError("resize: --force is for an output folder (resize DIR -o OUTDIR)");
  const PositionTable& t = r.table;
  if (q.table_only || ends_with_npy(q.out) || file.format == TensorFileFormat::npy) {
    save_position_table(q.out, t, dtype);
    fmt::print("{}; wrote {} ({} x {}, the table alone)\n", r.done, quote_untrusted(q.out),
               t.values.rows(), t.values.cols());
    return;
  }
  const ResizedFile out = replace_position_table(file, t, dtype);
  write_safetensors(q.out, out.tensors, out.metadata);
  fmt::print("{}; wrote {}: the whole file, {} tensors, the table stored as {}\n", r.done,
             quote_untrusted(q.out), out.tensors.size(),
             shape_string(t.stored_shape.empty()
                              ? std::vector<std::uint64_t>{t.values.rows(), t.values.cols()}
                              : t.stored_shape));
  for (const auto& e : out.extended) fmt::print("  extended {}\n", quote_untrusted(e));
  fmt::print(
      "note: a config.json beside the checkpoint may still give the old size (a ViT's "
      "image_size); `posemb resize DIR --grid HxW -o OUTDIR` resizes a whole folder and keeps it "
      "in step\n");
}

}  // namespace

bool is_folder(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

FolderTable load_folder_table(const std::string& dir, const std::string& tensor) {
  FolderTable ft;
  ft.folder = read_checkpoint_folder(
      dir, tensor.empty() ? std::nullopt : std::optional<std::string>(tensor));
  ft.table =
      load_position_table(ft.folder.table_file, ft.folder.table_path(), ft.folder.table_tensor);
  ft.table.how_found = ft.folder.how_found;
  return ft;
}

bool resize_grid_or_folder(const GridResizeRequest& q) {
  const bool folder = is_folder(q.path);
  std::optional<FolderTable> ft;
  TensorFile file;
  PositionTable t;
  if (folder) {
    // Before any work: a folder is written as a folder (its table alone would be --table-only,
    // which a folder does not take either).
    if (q.table_only) throw UsageError("resize: --table-only writes a file, not a folder");
    ft = load_folder_table(q.path, q.tensor);  // a checkpoint folder, or it says what it is not
    if (ends_with_npy(q.out)) {
      throw UsageError("resize: " + quote_untrusted(q.path) +
                       " is a checkpoint folder, written as a folder (-o OUTDIR), not as " +
                       quote_untrusted(q.out) +
                       "; for the table alone, resize the folder's "
                       "weights file: posemb resize DIR/model.safetensors ... -o TABLE.npy");
    }
    file = ft->folder.table_file;
    t = ft->table;
  } else {
    file = read_tensor_file(q.path);
    refuse_file_output_over_input(q.out, "resize");
    t = load_position_table(file, q.path,
                            q.tensor.empty() ? std::nullopt : std::optional<std::string>(q.tensor));
  }
  const TableClass kind =
      file.format == TensorFileFormat::npy ? TableClass{} : classify_table(file, t.source_tensor);
  const bool two_d = q.grid || q.from_grid || q.prefix_tokens || is_grid_method(q.method) ||
                     kind.kind == TableKind::vision;
  if (!folder && !two_d) return false;
  std::optional<DType> dtype;
  if (!q.dtype.empty()) dtype = parse_float_dtype(q.dtype);
  const Resized r =
      two_d ? resize_2d(q, t, kind) : resize_1d(q, file, ft->folder.table_path(), t, dtype);
  if (folder) {
    write_folder(q, ft->folder, r, dtype);
  } else {
    write_file(q, file, r, dtype);
  }
  return true;
}

namespace {

// "agrees", or "DISAGREES" and, when the number is the right one written as a float (16.0, 1.6e1),
// why that still disagrees: transformers keeps it a float (nn.Embedding(16.0, ...) fails).
std::string length_verdict(const ConfigLength& l) {
  if (l.agrees()) return "agrees";
  const bool integer_expected =
      !l.expected.empty() && std::all_of(l.expected.begin(), l.expected.end(),
                                         [](char ch) { return ch >= '0' && ch <= '9'; });
  if (integer_expected && !l.value.empty() &&
      (l.value[0] == '-' || std::isdigit(static_cast<unsigned char>(l.value[0])) != 0)) {
    char* end = nullptr;
    const double v = std::strtod(l.value.c_str(), &end);
    if (end == l.value.c_str() + l.value.size() && v == std::strtod(l.expected.c_str(), nullptr)) {
      return "DISAGREES: the right number, but written as a float (transformers reads " + l.value +
             " as a float, where the model needs an integer; write " + l.expected + ")";
    }
  }
  return "DISAGREES";
}

}  // namespace

std::optional<std::size_t> vision_prefix_rows(const PositionTable& t, const TensorFile& file) {
  if (file.format == TensorFileFormat::npy) return std::nullopt;
  const TableClass kind = classify_table(file, t.source_tensor);
  if (kind.kind != TableKind::vision) return std::nullopt;
  try {
    return vision_layout(t, kind).prefix_tokens;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // no grid: the grid line says why
  }
}

void print_vision_and_config(const PositionTable& t, const TensorFile& file,
                             const CheckpointFolder* folder) {
  const TableClass kind =
      file.format == TensorFileFormat::npy ? TableClass{} : classify_table(file, t.source_tensor);
  if (kind.kind == TableKind::vision) {
    try {
      fmt::print("grid:            {}\n", vision_layout(t, kind).how);
    } catch (const std::invalid_argument& e) {
      fmt::print("grid:            not found: {}\n", e.what());
    }
  }
  if (folder == nullptr) return;
  fmt::print("folder:          {} (the table in {}; {} shard(s), {} other file(s))\n",
             quote_untrusted(folder->dir), quote_untrusted(folder->table_shard),
             folder->shards.size(), folder->other_files.size());
  const ConfigCheck c = check_checkpoint_config(folder->config_text, folder->dir + "/config.json",
                                                file, t.source_tensor, t.values.rows());
  for (const auto& l : c.lengths) {
    fmt::print("config.json:     {} = {} (the table's {} rows imply {}): {}\n", l.key, l.value,
               t.values.rows(), l.expected, length_verdict(l));
  }
  if (!c.note.empty()) fmt::print("config.json:     {}\n", c.note);
  fmt::print("config vs table: {} ({})\n", c.agrees() ? "agree" : "disagree", c.family);
}

}  // namespace posemb::cli
