#include "table_report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "lab/train/checkpoint_table.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "posemb/table_analysis.hpp"
#include "viz/heatmap.hpp"

namespace posemb::cli {
namespace {

// Up to 4 names, then how many more.
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) {
    s += (i != 0 ? ", " : "") + quote_untrusted(names[i]);
  }
  if (names.size() > 4) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

// The notes after a whole file is written: tensors still sized for the old table, and what
// else may still give the old length.
void print_whole_file_notes(const FileResize& r, bool lab_checkpoint, bool table_metadata) {
  const auto& kept = r.file.kept_with_old_length;
  if (!kept.empty() && !lab_checkpoint) {
    warn(std::to_string(kept.size()) + " tensor(s) still have the old length " +
         std::to_string(r.old_rows) + " and were kept as they were: " + name_list(kept) +
         " (masks or optimizer state sized for the old table; a program loading the file may "
         "have to rebuild them)");
  }
  if (lab_checkpoint) {
    const auto fit = lab::table_fit(r.file.metadata, r.table.values.rows());
    fmt::print(
        "note: a posemb lab checkpoint: train from it with `posemb train --init-from {} "
        "--train-len N` (a new run, a fresh optimizer{}); --resume refuses it, its optimizer "
        "state being the old table's\n",
        quote_untrusted(r.output),
        fit ? fmt::format("; n <= {} fits the table", fit->train_len) : std::string());
  } else if (!table_metadata) {
    fmt::print(
        "note: a configuration beside the checkpoint (Hugging Face's config.json: "
        "max_position_embeddings, n_positions, a ViT's image_size) may still give the old "
        "length; the table now has {} rows\n",
        r.table.values.rows());
  }
}

}  // namespace

std::size_t write_cosine_heatmap(MatrixView<const float> unit, std::size_t step,
                                 const std::string& path, const std::string& tensor,
                                 const std::string& file) {
  if (step == 0) step = 1;
  if (unit.rows() == 0) throw std::invalid_argument("inspect: the table has no rows to plot");
  const Matrix<float> sim = cosine_similarity(unit, step);
  viz::HeatmapOptions o;
  // Names from the file are shown as messages show them: quoted, control bytes escaped.
  const std::string base = std::filesystem::path(file).filename().string();
  o.title = "cosine similarity between positions of " + quote_untrusted(tensor, 80) + " in " +
            quote_untrusted(base.empty() ? file : base, 80) +
            (step > 1 ? " (every " + std::to_string(step) + "th)" : std::string());
  o.index_step = step;
  write_file_atomically(path, "inspect --plot", viz::heatmap_png(sim, o));
  return sim.rows();
}

std::size_t heatmap_side(std::size_t rows, std::size_t max_plot) {
  if (rows == 0 || max_plot == 0) return 0;
  const std::size_t step = rows / max_plot + (rows % max_plot != 0 ? 1 : 0);
  return rows / step + (rows % step != 0 ? 1 : 0);
}

double inspect_work(std::size_t rows, std::size_t dim, std::size_t heatmap_side) {
  const double r = static_cast<double>(rows), d = static_cast<double>(dim);
  const double n = static_cast<double>(heatmap_side);
  return r * d * (std::log2(std::max(r, 1.0)) + 2.0) + n * n * d;
}

std::string inspect_work_text(std::size_t rows, std::size_t dim, std::size_t heatmap_side) {
  return fmt::format("the table's {} rows of {} columns{}", rows, dim,
                     heatmap_side != 0 ? fmt::format(", with a heatmap of {} x {} positions,",
                                                     heatmap_side, heatmap_side)
                                       : "");
}

bool ends_with_npy(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

void warn(const std::string& text) {
  fmt::print(stderr, "posemb: warning: {}\n", text);
}

std::string looks_reserved(const PositionTable& table, std::size_t k) {
  return "row " + std::to_string(k - 1) + " of " + quote_untrusted(table.source_tensor) +
         " is all zeros, so its first " + std::to_string(k) +
         " rows look reserved (RoBERTa's table reserves 2, its padding row 1 all zeros: position "
         "p is row p + 2) and the file does not say";
}

std::string squeeze_note(const PositionTable& table) {
  if (table.stored_shape.size() <= 2) return {};
  return "tensor " + quote_untrusted(table.source_tensor) + " is stored as " +
         shape_string(table.stored_shape) + " (ViT style): read as a " +
         std::to_string(table.values.rows()) + " x " + std::to_string(table.values.cols()) +
         " table (positions x dim, the leading 1s squeezed) and written back with its leading 1s; "
         "in a ViT, row 0 is the class token (--reserved-rows 1) and the rest a 2-D grid of "
         "patches, which posemb resizes as one sequence";
}

void print_resize_report(const FileResize& r, bool lab_checkpoint, bool table_metadata,
                         bool table_only_asked) {
  const PositionTable& t = r.table;
  if (r.unstated_reserved_rows) {
    warn(looks_reserved(t, *r.unstated_reserved_rows) + "; resize treated all " +
         std::to_string(r.old_rows) + " rows as positions. Pass --reserved-rows " +
         std::to_string(*r.unstated_reserved_rows) +
         " if they are reserved, --reserved-rows 0 if they are not");
  }
  if (const std::string n = squeeze_note(t); !n.empty()) fmt::print("{}\n", n);
  const std::string done =
      fmt::format("tensor {} ({}): {} -> {} positions by {} ({} reserved rows kept)",
                  quote_untrusted(t.source_tensor), t.how_found, r.old_positions, t.positions(),
                  t.resizes.empty() ? std::string() : t.resizes.back().method, t.reserved_rows);
  if (!r.whole_file) {
    const bool npy = ends_with_npy(r.output);
    fmt::print("{}; wrote {} ({} x {}{})\n", done, quote_untrusted(r.output), t.values.rows(),
               t.values.cols(),
               table_only_asked ? ", the table alone"
               : npy            ? ", the table alone: a .npy file holds one array"
                                : "");
    if (npy && t.reserved_rows != 0) {
      warn(quote_untrusted(r.output) + " holds all " + std::to_string(t.values.rows()) +
           " rows, the " + std::to_string(t.reserved_rows) +
           " reserved ones first; .npy cannot record that: pass --reserved-rows " +
           std::to_string(t.reserved_rows) + " when reading it, or write .safetensors");
    }
    return;
  }
  fmt::print(
      "{}; wrote {}: the whole file, {} tensors (the table {} x {}, the others as they "
      "were), metadata kept, lineage in posemb.provenance\n",
      done, quote_untrusted(r.output), r.file.tensors.size(), t.values.rows(), t.values.cols());
  for (const auto& e : r.file.extended) fmt::print("  extended {}\n", quote_untrusted(e));
  print_whole_file_notes(r, lab_checkpoint, table_metadata);
}

}  // namespace posemb::cli
