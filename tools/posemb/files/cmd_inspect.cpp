// `posemb inspect FILE [--tensor NAME] [--reserved-rows K] [--plot OUT.png]`: what a position
// table holds and how its rows relate.
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "lab/train/checkpoint_table.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/table_analysis.hpp"
#include "table_report.hpp"
#include "vision_folder.hpp"

namespace posemb::cli {
namespace {

struct InspectOptions {
  std::string file;
  std::string tensor;
  std::optional<std::size_t> reserved_rows;
  std::string plot;
  std::size_t max_plot = 2048;
};

// The training length in the unit of the command that trained it: a posemb lab checkpoint's is
// the task's n (as `posemb train --train-len` and `posemb eval` give it), with the table rows its
// sequences fill; any other file's is the recorded number of positions.
std::string training_length_text(const PositionTable& t, const TensorFile& file) {
  if (!t.training_length) return "unknown";
  const auto fit = lab::is_lab_checkpoint(file.metadata)
                       ? lab::table_fit(file.metadata, *t.training_length)
                       : std::nullopt;
  if (!fit) return std::to_string(*t.training_length);
  return fmt::format("n = {} (--train-len; its sequences of {} tokens fill {} table rows)",
                     fit->train_len, fit->length_rule, *t.training_length);
}

void run_inspect(const InspectOptions& o) {
  // A checkpoint folder: the table from whichever shard holds it (vision_folder.cpp).
  refuse_output_is_named_input(o.file, o.plot, "inspect --plot");
  std::optional<FolderTable> folder;
  if (is_folder(o.file)) folder = load_folder_table(o.file, o.tensor);
  const TensorFile file = folder ? folder->folder.table_file : read_tensor_file(o.file);
  // Every file read: the table, or every file of the folder (shards, index, config.json).
  refuse_file_output_over_input(o.plot, "inspect --plot");
  PositionTable t =
      folder ? folder->table
             : load_position_table(
                   file, o.file,
                   o.tensor.empty() ? std::nullopt : std::optional<std::string>(o.tensor));
  if (o.reserved_rows) {
    if (*o.reserved_rows > t.values.rows()) {
      throw UsageError("inspect: --reserved-rows " + std::to_string(*o.reserved_rows) +
                       " exceeds the table's " + std::to_string(t.values.rows()) + " rows");
    }
    t.reserved_rows = *o.reserved_rows;
  }
  // A vision table's prefix tokens are its reserved rows, as `resize --grid` records them: the
  // same count before and after a resize.
  bool stated = o.reserved_rows.has_value();
  if (!stated && !t.reserved_rows_recorded) {
    if (const auto prefix = vision_prefix_rows(t, file)) {
      t.reserved_rows = *prefix;
      stated = true;
    }
  }
  const std::size_t rows = t.usable().rows(), dim = t.values.cols();  // work bounded up front
  const std::size_t n = o.plot.empty() ? 0 : heatmap_side(rows, o.max_plot);
  refuse_work_over("inspect", inspect_work_text(rows, dim, n), inspect_work(rows, dim, n),
                   kInspectMaxWork, "multiply-adds", "minutes of computing",
                   n != 0 ? "plot fewer positions (flag --max-plot)" : "the table is too large");
  if (const auto k = unstated_reserved_rows(t, stated)) {
    warn(looks_reserved(t, *k) + "; shown as " + std::to_string(t.values.rows()) +
         " positions. Pass --reserved-rows " + std::to_string(*k) + " if they are reserved");
  }
  fmt::print("file:            {}\n", quote_untrusted(o.file));
  fmt::print("tensor:          {} ({})\n", quote_untrusted(t.source_tensor), t.how_found);
  fmt::print("shape:           {} x {} (rows x dim), dtype {}{}\n", t.values.rows(),
             t.values.cols(), dtype_name(t.dtype),
             t.stored_shape.size() > 2
                 ? ", stored as " + shape_string(t.stored_shape) + " (leading 1s squeezed)"
                 : std::string());
  fmt::print("reserved rows:   {} (position p is row {} + p; {} positions)\n", t.reserved_rows,
             t.reserved_rows, t.positions());
  print_vision_and_config(t, file, folder ? &folder->folder : nullptr);
  fmt::print("training length: {}\n", training_length_text(t, file));
  // Metadata comes from the file: shown quoted, control bytes escaped.
  fmt::print("initializer:     {}\n",
             t.initializer.empty() ? "unknown" : quote_untrusted(t.initializer, 1024));
  if (!t.provenance.empty())
    fmt::print("provenance:      {}\n", quote_untrusted(t.provenance, 4096));
  const auto usable = t.usable();
  const RowNormStats s = row_norm_stats(usable);
  fmt::print("row norms:       min {:.6g}  mean {:.6g}  max {:.6g}  std {:.6g}\n", s.min, s.mean,
             s.max, s.stddev);
  fmt::print("mean cosine similarity of positions at distance d:\n");
  for (const auto& [d, c] : distance_profile(usable)) {
    fmt::print("  d = {:>6}: {:+.4f}\n", d, c);
  }
  if (!o.plot.empty()) {
    const std::size_t step = (usable.rows() + o.max_plot - 1) / o.max_plot;
    const std::size_t side =
        write_cosine_heatmap(unit_rows(usable), step, o.plot, t.source_tensor, o.file);
    fmt::print(
        "heatmap:         {} ({} x {} cells, every {} position(s); blue -1, white 0, red +1)\n",
        quote_untrusted(o.plot), side, side, step == 0 ? 1 : step);
  }
}

}  // namespace

void register_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show a position table: shape, dtype, reserved rows, row norms, similarity");
  cmd->add_option("file", o->file,
                  "A .safetensors or .npy file, or a Hugging Face checkpoint folder (whose "
                  "config.json is checked against the table)")
      ->required()
      ->check(non_empty());
  cmd->add_option("--tensor", o->tensor, "The table's tensor name (default: found by name)")
      ->check(non_empty());
  cmd->add_option("--reserved-rows", o->reserved_rows,
                  "Leading rows that are not positions (RoBERTa, BART: 2)")
      ->check(whole_number());
  cmd->add_option("--plot", o->plot, "Write a row-by-row cosine-similarity heatmap PNG")
      ->check(CLI::Validator(
          [](std::string& path) { return path.empty() ? std::string("an empty path") : ""; },
          "PNG"));
  cmd->add_option("--max-plot", o->max_plot,
                  "Largest heatmap side in cells (every k-th position of a longer table)")
      ->check(CLI::Range(1, 8192));
  cmd->callback(read_files_protected([o] { run_inspect(*o); }));
}

}  // namespace posemb::cli
