// `posemb convert IN OUT`: between .npy and .safetensors (the format is chosen by OUT's
// extension: .npy, anything else safetensors; IN's by its content).
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "posemb/errors.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/table_analysis.hpp"
#include "posemb/tensor_file.hpp"
#include "table_report.hpp"

namespace posemb::cli {
namespace {

struct ConvertOptions {
  std::string in;
  std::string out;
  std::string tensor;
  std::string name;  // empty: position_embeddings
  std::string dtype;
};

// .npy holds every row and no metadata: the reserved rows of a table (recorded, or likely from
// an all-zero leading row) are said on stderr, as `posemb resize` does for a .npy output.
void warn_reserved_rows(const TensorFile& file, const ConvertOptions& o,
                        const std::string& chosen) {
  if (file.format != TensorFileFormat::safetensors) return;
  PositionTable t;
  try {
    t = load_position_table(file, o.in, chosen);
  } catch (const std::exception&) {
    return;  // not a position table (an integer buffer, a NaN table): nothing to say
  }
  std::size_t k = t.reserved_rows;  // from posemb.reserved_rows, when it describes this tensor
  std::string why = fmt::format("{} records {} reserved rows", o.in, k);
  if (k == 0) {
    const auto likely = unstated_reserved_rows(t);
    if (!likely) return;
    k = *likely;
    why = looks_reserved(t, k);
  }
  warn(why + "; " + o.out + " holds all " + std::to_string(t.values.rows()) +
       " rows and .npy cannot record that: pass --reserved-rows " + std::to_string(k) +
       " when reading it, or convert to .safetensors");
}

void run_convert(const ConvertOptions& o) {
  refuse_output_is_named_input(o.in, o.out, "convert");
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = parse_float_dtype(o.dtype);
  TensorFile file = read_tensor_file(o.in);  // the format by content; nothing decoded yet
  refuse_file_output_over_input(o.out, "convert");
  const bool npy_in = file.format == TensorFileFormat::npy;
  // Each flag names one tensor of one kind of conversion; elsewhere it would be silently idle.
  if (!o.tensor.empty() && (npy_in || !ends_with_npy(o.out))) {
    throw UsageError(npy_in ? "convert: --tensor does not apply to a .npy input"
                            : "convert: --tensor picks the tensor of a .npy output; safetensors "
                              "-> safetensors copies every tensor");
  }
  if (!o.name.empty() && (!npy_in || ends_with_npy(o.out))) {
    throw UsageError(!npy_in ? "convert: --name names the array of a .npy input; a safetensors "
                               "input's tensors keep their names"
                             : "convert: --name names the tensor of a safetensors output; a "
                               ".npy output holds one unnamed array");
  }
  std::string chosen;
  std::string how;
  if (npy_in) {
    const std::string name = o.name.empty() ? "position_embeddings" : o.name;
    file.tensors.front().set_name(name);
    chosen = name;
    how = "the only array of a .npy file";
  } else if (ends_with_npy(o.out)) {
    chosen = find_position_tensor(
        file, o.in, o.tensor.empty() ? std::nullopt : std::optional<std::string>(o.tensor), &how);
  }
  if (ends_with_npy(o.out)) {
    const Tensor& t = *file.find(chosen);
    if (dtype && *dtype == DType::BF16) throw UsageError("convert: .npy output cannot hold bf16");
    // numpy has no bfloat16: F32 holds every value exactly. A narrowing --dtype refuses a value
    // it would store as infinity.
    const DType to = dtype ? *dtype : t.dtype() == DType::BF16 ? DType::F32 : t.dtype();
    if (dtype_is_float(t.dtype())) {
      write_npy(o.out, t, to);
    } else {
      if (dtype) (void)t.astype(to);  // throws: not a float tensor
      write_npy(o.out, t);
    }
    fmt::print("tensor {} ({}) -> {} ({})\n", quote_untrusted(chosen), how, quote_untrusted(o.out),
               dtype_name(dtype_is_float(t.dtype()) ? to : t.dtype()));
    warn_reserved_rows(file, o, chosen);
    return;
  }
  if (!chosen.empty() && file.metadata.count("posemb.tensor") == 0) {
    file.metadata["posemb.tensor"] = chosen;  // so that posemb finds the table again
  }
  // Float tensors are converted to --dtype when given; the others pass through unchanged.
  write_safetensors(o.out, file.tensors, file.metadata, dtype);
  fmt::print("{} tensor(s) -> {}{}\n", file.tensors.size(), quote_untrusted(o.out),
             dtype ? " (float tensors as " + std::string(dtype_name(*dtype)) + ")" : std::string());
}

}  // namespace

void register_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert between .npy and .safetensors");
  cmd->add_option("input", o->in, "A .npy or .safetensors file")->required()->check(non_empty());
  cmd->add_option("output", o->out, "Output: .npy, or anything else for safetensors")
      ->required()
      ->check(non_empty());
  cmd->add_option("--tensor", o->tensor,
                  "safetensors -> .npy only: the tensor to write (default: the position table, "
                  "found by name)")
      ->check(non_empty());
  cmd->add_option("--name", o->name,
                  ".npy -> safetensors only: the tensor's name (default: position_embeddings)")
      ->check(non_empty());
  cmd->add_option("--dtype", o->dtype, "Output dtype: f32, f64, f16, bf16 (default: input's)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  cmd->callback(read_files_protected([o] { run_convert(*o); }));
}

}  // namespace posemb::cli
