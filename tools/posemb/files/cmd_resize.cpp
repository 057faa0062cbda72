// `posemb resize FILE --to N --method M -o OUT`: the file with a longer (or shorter) position
// table. By default the whole file is written (every other tensor and the metadata kept,
// position-id buffers extended, the lineage in posemb.provenance); --table-only (or a .npy
// output) writes the table alone.
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "lab/config.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "table_report.hpp"

namespace posemb::cli {
namespace {

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
};

bool ends_with_npy(const std::string& p) {
  return p.size() >= 4 && p.compare(p.size() - 4, 4, ".npy") == 0;
}

// Up to 4 names, then how many more.
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) {
    s += (i != 0 ? ", " : "") + quote_untrusted(names[i]);
  }
  if (names.size() > 4) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

// A posemb lab checkpoint records its table's rows in its run settings (posemb.lab.run,
// model.max_seq_len): keep them true. Settings that do not parse are left as they were (the
// lab refuses them when the file is used).
void update_lab_settings(Metadata& metadata, std::size_t rows) {
  const auto it = metadata.find("posemb.lab.run");
  if (it == metadata.end()) return;
  try {
    lab::RunConfig run = lab::RunConfig::from_json(it->second);
    run.model.max_seq_len = rows;
    it->second = run.to_json();
  } catch (const std::exception&) {
  }
}

void run_resize(const ResizeCliOptions& o) {
  const ResizeMethod method = parse_resize_method(o.method);
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = parse_float_dtype(o.dtype);
  const TensorFile file = read_tensor_file(o.file);  // opened once; nothing decoded yet
  PositionTable t = load_position_table(
      file, o.file, o.tensor.empty() ? std::nullopt : std::optional<std::string>(o.tensor));
  if (o.reserved_rows) {
    if (*o.reserved_rows > t.values.rows()) {
      throw UsageError("resize: --reserved-rows " + std::to_string(*o.reserved_rows) +
                       " exceeds the table's " + std::to_string(t.values.rows()) + " rows");
    }
    t.reserved_rows = *o.reserved_rows;
  }
  const PositionTable r = resize_table(t, o.to, method, o.resize);
  if (const std::string w = looks_reserved(t, o.reserved_rows.has_value()); !w.empty()) {
    warn(w + "; resize treated all " + std::to_string(t.values.rows()) +
         " rows as positions. Pass --reserved-rows " +
         std::to_string(likely_reserved_rows(t.values)) +
         " if they are reserved, --reserved-rows 0 if they are not");
  }
  if (const std::string n = squeeze_note(t); !n.empty()) fmt::print("{}\n", n);
  const std::string done =
      fmt::format("tensor {} ({}): {} -> {} positions by {} ({} reserved rows kept)",
                  quote_untrusted(t.source_tensor), t.how_found, t.positions(), r.positions(),
                  o.method, r.reserved_rows);
  const bool npy = ends_with_npy(o.out);
  if (o.table_only || npy || file.format == TensorFileFormat::npy) {
    save_position_table(o.out, r, dtype);
    fmt::print("{}; wrote {} ({} x {}{})\n", done, quote_untrusted(o.out), r.values.rows(),
               r.values.cols(),
               o.table_only ? ", the table alone"
               : npy        ? ", the table alone: a .npy file holds one array"
                            : "");
    if (npy && r.reserved_rows != 0) {
      warn(quote_untrusted(o.out) + " holds all " + std::to_string(r.values.rows()) +
           " rows, the " + std::to_string(r.reserved_rows) +
           " reserved ones first; .npy cannot record that: pass --reserved-rows " +
           std::to_string(r.reserved_rows) + " when reading it, or write .safetensors");
    }
    return;
  }
  ResizedFile out = replace_position_table(file, r, dtype);
  update_lab_settings(out.metadata, r.values.rows());
  write_safetensors(o.out, out.tensors, out.metadata);
  fmt::print(
      "{}; wrote {}: the whole file, {} tensors (the table {} x {}, the others as they "
      "were), metadata kept, lineage in posemb.provenance\n",
      done, quote_untrusted(o.out), out.tensors.size(), r.values.rows(), r.values.cols());
  for (const auto& e : out.extended) fmt::print("  extended {}\n", quote_untrusted(e));
  const bool lab_checkpoint = file.metadata.count("posemb.lab.run") != 0;
  if (!out.kept_with_old_length.empty() && !lab_checkpoint) {
    warn(std::to_string(out.kept_with_old_length.size()) + " tensor(s) still have the old length " +
         std::to_string(t.values.rows()) +
         " and were kept as they were: " + name_list(out.kept_with_old_length) +
         " (masks or optimizer state sized for the old table; a program loading the file may "
         "have to rebuild them)");
  }
  if (lab_checkpoint) {
    fmt::print(
        "note: a posemb lab checkpoint: train from it with `posemb train --init-from {} "
        "--train-len N` (a new run, a fresh optimizer; n <= {} fits the table); --resume "
        "refuses it, its optimizer state being the old table's\n",
        quote_untrusted(o.out), r.values.rows() >= 2 ? (r.values.rows() - 2) / 2 : 0);
  } else if (file.metadata.count("posemb.tensor") == 0) {
    fmt::print(
        "note: a configuration beside the checkpoint (Hugging Face's config.json: "
        "max_position_embeddings, n_positions, a ViT's image_size) may still give the old "
        "length; the table now has {} rows\n",
        r.values.rows());
  }
}

}  // namespace

void register_resize_command(CLI::App& app) {
  auto o = std::make_shared<ResizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "resize",
      "Grow (copy, interpolate, random, sinusoidal) or shrink (truncate) the position table of "
      "a checkpoint; writes the whole checkpoint with the new table (--table-only: the table)");
  cmd->add_option("file", o->file, "A .safetensors or .npy file")->required();
  cmd->add_option("--to", o->to, "Number of positions of the result (reserved rows extra)")
      ->required()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  std::vector<std::string> methods;
  for (auto m : kResizeMethods) methods.emplace_back(resize_method_name(m));
  cmd->add_option("--method", o->method,
                  "copy (tile the old positions), interpolate (linear), random (new rows drawn by "
                  "--initializer), sinusoidal (new rows the sinusoidal encoding, scaled to the "
                  "old rows' norm), truncate (shrink)")
      ->required()
      ->check(CLI::IsMember(methods));
  cmd->add_option("-o,--output", o->out,
                  "Output file: .safetensors (the whole input with the new table), or .npy (the "
                  "table)")
      ->required();
  cmd->add_flag("--table-only", o->table_only,
                "Write the table alone (with posemb's metadata), not the whole checkpoint");
  cmd->add_option("--tensor", o->tensor, "The table's tensor name (default: found by name)");
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
  cmd->callback([o] { run_resize(*o); });
}

}  // namespace posemb::cli
