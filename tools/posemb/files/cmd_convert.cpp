// `posemb convert IN OUT`: between .npy and .safetensors (the format is chosen by OUT's
// extension: .npy, anything else safetensors; IN's by its content).
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::cli {
namespace {

struct ConvertOptions {
  std::string in;
  std::string out;
  std::string tensor;
  std::string name = "position_embeddings";
  std::string dtype;
};

bool ends_with_npy(const std::string& p) {
  return p.size() >= 4 && p.compare(p.size() - 4, 4, ".npy") == 0;
}

void run_convert(const ConvertOptions& o) {
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = parse_float_dtype(o.dtype);
  TensorFile file;
  std::string chosen;
  std::string how;
  if (is_npy_file(o.in)) {
    if (!o.tensor.empty()) throw UsageError("convert: --tensor does not apply to a .npy input");
    Tensor t = read_npy(o.in);
    t.name = o.name;
    file.tensors.push_back(std::move(t));
    chosen = o.name;
    how = "the only array of a .npy file";
  } else {
    file = read_safetensors(o.in);
    if (ends_with_npy(o.out)) {
      chosen = find_position_tensor(
          file, o.in, o.tensor.empty() ? std::nullopt : std::optional<std::string>(o.tensor), &how);
    }
  }
  if (ends_with_npy(o.out)) {
    Tensor t = *file.find(chosen);
    if (!t.has_values()) {
      throw std::runtime_error("convert: tensor '" + chosen + "' has dtype " +
                               std::string(dtype_name(t.dtype)) +
                               ", which .npy output cannot hold");
    }
    const DType out = dtype.value_or(t.dtype == DType::F64 ? DType::F64 : DType::F32);
    if (out != DType::F32 && out != DType::F64) {
      throw UsageError("convert: .npy output holds f32 or f64, not " + o.dtype);
    }
    if (out != t.dtype) {  // F16/BF16 -> F32 is exact; F32 <-> F64 converts each value
      if (out == DType::F64) {
        t.values_f64.assign(t.values.begin(), t.values.end());
        t.values.clear();
      } else if (t.dtype == DType::F64) {
        t.values.assign(t.values_f64.begin(), t.values_f64.end());
        t.values_f64.clear();
      }
      t.dtype = out;
    }
    write_npy(o.out, t);
    fmt::print("tensor '{}' ({}) -> {} ({})\n", chosen, how, o.out, dtype_name(out));
    return;
  }
  if (!chosen.empty() && file.metadata.count("posemb.tensor") == 0) {
    file.metadata["posemb.tensor"] = chosen;  // so that posemb finds the table again
  }
  write_safetensors(o.out, file.tensors, file.metadata, dtype);
  fmt::print("{} tensor(s) -> {}{}\n", file.tensors.size(), o.out,
             dtype ? " (" + std::string(dtype_name(*dtype)) + ")" : std::string());
}

}  // namespace

void register_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert between .npy and .safetensors");
  cmd->add_option("input", o->in, "A .npy or .safetensors file")->required();
  cmd->add_option("output", o->out, "Output: .npy, or anything else for safetensors")->required();
  cmd->add_option("--tensor", o->tensor, "safetensors -> .npy: the tensor to write");
  cmd->add_option("--name", o->name, ".npy -> safetensors: the tensor's name");
  cmd->add_option("--dtype", o->dtype, "Output dtype: f32, f64, f16, bf16 (default: input's)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  cmd->callback([o] { run_convert(*o); });
}

}  // namespace posemb::cli
