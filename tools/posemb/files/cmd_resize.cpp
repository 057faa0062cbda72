// `posemb resize FILE --to N --method M -o OUT`: the file with a longer (or shorter) position
// table. By default the whole file is written (every other tensor and the metadata kept,
// position-id buffers extended, the lineage in posemb.provenance and posemb.resizes);
// --table-only (or a .npy output) writes the table alone. The library does the work
// (posemb::resize_file; for a lab checkpoint lab::resize_checkpoint_table); this file maps the
// flags and prints.
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "lab/train/checkpoint_table.hpp"
#include "posemb/grid_resize.hpp"
#include "posemb/resize.hpp"
#include "table_report.hpp"
#include "vision_folder.hpp"

namespace posemb::cli {
namespace {

// The flags, as CLI11 fills them.
struct ResizeCliOptions {
  std::string file;
  std::string out;
  std::size_t to = 0;
  std::string method;
  std::string tensor;
  std::optional<std::size_t> reserved_rows;
  std::string dtype;
  bool table_only = false;
  ResizeOptions resize;
  // Vision grids and checkpoint folders (vision_folder.cpp).
  std::optional<std::size_t> prefix_tokens;
  std::optional<std::string> grid;
  std::optional<std::string> from_grid;
  bool force = false;
};

FileResizeRequest request_of(const ResizeCliOptions& o) {
  FileResizeRequest r;
  r.output = o.out;
  if (!o.tensor.empty()) r.tensor = o.tensor;
  r.reserved_rows = o.reserved_rows;
  r.positions = o.to;
  r.method = parse_resize_method(o.method);
  r.options = o.resize;
  if (!o.dtype.empty()) r.dtype = parse_float_dtype(o.dtype);
  r.table_only = o.table_only;
  return r;
}

void run_resize(const ResizeCliOptions& o) {
  refuse_output_is_named_input(o.file, o.out, "resize");
  // A folder, a vision table or a --grid request: resized in 2-D / written as a folder.
  if (resize_grid_or_folder({o.file, o.out, o.method, o.tensor, o.dtype, o.to, o.reserved_rows,
                             o.prefix_tokens, o.grid, o.from_grid, o.force, o.table_only,
                             o.resize})) {
    return;
  }
  if (o.to == 0) throw UsageError("resize: --to N is required (--grid HxW for a vision table)");
  if (o.method.empty()) throw UsageError("resize: --method is required for a 1-D table");
  if (o.force) throw UsageError("resize: --force is for an output folder (resize DIR -o OUTDIR)");
  const FileResizeRequest request = request_of(o);
  const TensorFile file = read_tensor_file(o.file);  // opened once; nothing decoded yet
  refuse_file_output_over_input(o.out, "resize");
  const bool lab_checkpoint = lab::is_lab_checkpoint(file.metadata);
  FileResize r;
  try {
    r = lab_checkpoint ? lab::resize_checkpoint_table(file, o.file, request)
                       : resize_file(file, o.file, request);
  } catch (const ReservedRowsOutOfRange& e) {
    throw UsageError("resize: --reserved-rows " + std::to_string(e.requested()) +
                     " exceeds the table's " + std::to_string(e.rows()) + " rows");
  }
  print_resize_report(r, lab_checkpoint, file.metadata.count("posemb.tensor") != 0, o.table_only);
}

}  // namespace

void register_resize_command(CLI::App& app) {
  auto o = std::make_shared<ResizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "resize",
      "Grow (copy, interpolate, random, sinusoidal) or shrink (truncate) the position table of "
      "a checkpoint; writes the whole checkpoint with the new table (--table-only: the table)");
  cmd->add_option("file", o->file,
                  "A .safetensors or .npy file, or a Hugging Face checkpoint folder (config.json "
                  "and model.safetensors or its shards)")
      ->required()
      ->check(non_empty());
  cmd->add_option("--to", o->to,
                  "Number of positions of the result (reserved rows extra); of a vision table: "
                  "its rows, prefix tokens included (N - prefix must be a square)")
      ->check(CLI::Range(std::size_t{1}, kMaxGridTableRows));
  std::vector<std::string> methods;
  for (auto m : kResizeMethods) methods.emplace_back(resize_method_name(m));
  for (const char* m : {"bicubic", "bilinear", "sincos"}) methods.emplace_back(m);
  cmd->add_option("--method", o->method,
                  "copy (tile the old positions), interpolate (linear), random (new rows drawn by "
                  "--initializer), sinusoidal (new rows the sinusoidal encoding, scaled to the "
                  "old rows' norm), truncate (shrink); a vision grid: bicubic (default), bilinear "
                  "(torch's interpolate, align_corners=False), sincos (MAE's 2-D table)")
      ->check(CLI::IsMember(methods));
  cmd->add_option("-o,--output", o->out,
                  "Output file: .safetensors (the whole input with the new table), or .npy (the "
                  "table)")
      ->required()
      ->check(non_empty());
  cmd->add_flag("--table-only", o->table_only,
                "Write the table alone (with posemb's metadata), not the whole checkpoint");
  cmd->add_option("--tensor", o->tensor, "The table's tensor name (default: found by name)")
      ->check(non_empty());
  cmd->add_option("--reserved-rows", o->reserved_rows,
                  "Leading rows that are not positions (RoBERTa, BART: 2; a ViT class token: 1)")
      ->check(whole_number());
  cmd->add_option("--dtype", o->dtype,
                  "dtype of the written table: f32, f64, f16, bf16 (default: input's; other "
                  "tensors keep theirs)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  cmd->add_option("--initializer", o->resize.initializer, "random: distribution of new rows")
      ->check(CLI::IsMember({"normal", "scaled-normal", "glorot-uniform", "zeros", "sinusoidal"}));
  cmd->add_option("--std", o->resize.stddev, "random: standard deviation of new rows")
      ->check(positive_finite());
  cmd->add_option("--seed", o->resize.seed, "random: seed of new rows")->check(whole_number());
  cmd->add_option("--grid", o->grid,
                  "The new grid of a vision table, HxW (e.g. 24x24): the prefix tokens kept, the "
                  "grid resized in 2-D; with them at most 2^24 rows, as --to")
      ->check(non_empty());
  cmd->add_option("--from-grid", o->from_grid,
                  "The stored grid of a vision table when it is not square, HxW")
      ->check(non_empty());
  cmd->add_option("--prefix-tokens", o->prefix_tokens,
                  "Tokens before a vision table's grid (ViT, CLIP: 1; DeiT distilled: 2; default: "
                  "from the tensor's name)")
      ->check(whole_number());
  cmd->add_flag("--force", o->force, "Replace an existing non-empty output folder");
  cmd->callback(read_files_protected([o] { run_resize(*o); }));
}

}  // namespace posemb::cli
