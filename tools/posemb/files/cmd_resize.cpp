// `posemb resize FILE --to N --method M -o OUT`: a longer (or shorter) position table.
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

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
  ResizeOptions resize;
};

void run_resize(const ResizeCliOptions& o) {
  const ResizeMethod method = parse_resize_method(o.method);
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = parse_float_dtype(o.dtype);
  PositionTable t = load_position_table(
      o.file, o.tensor.empty() ? std::nullopt : std::optional<std::string>(o.tensor));
  if (o.reserved_rows) {
    if (*o.reserved_rows > t.values.rows()) {
      throw UsageError("resize: --reserved-rows " + std::to_string(*o.reserved_rows) +
                       " exceeds the table's " + std::to_string(t.values.rows()) + " rows");
    }
    t.reserved_rows = *o.reserved_rows;
  }
  const PositionTable r = resize_table(t, o.to, method, o.resize);
  save_position_table(o.out, r, dtype);
  fmt::print(
      "tensor {} ({}): {} -> {} positions by {} ({} reserved rows kept); wrote {} ({} x {})\n",
      quote_untrusted(t.source_tensor), t.how_found, t.positions(), r.positions(), o.method,
      r.reserved_rows, quote_untrusted(o.out), r.values.rows(), r.values.cols());
}

}  // namespace

void register_resize_command(CLI::App& app) {
  auto o = std::make_shared<ResizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "resize", "Grow (copy, interpolate, random) or shrink (truncate) a position table");
  cmd->add_option("file", o->file, "A .safetensors or .npy file")->required();
  cmd->add_option("--to", o->to, "Number of positions of the result (reserved rows extra)")
      ->required()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  cmd->add_option("--method", o->method, "copy | interpolate | random | truncate")
      ->required()
      ->check(CLI::IsMember({"copy", "interpolate", "random", "truncate"}));
  cmd->add_option("-o,--output", o->out, "Output file (.safetensors, or .npy)")->required();
  cmd->add_option("--tensor", o->tensor, "The table's tensor name (default: found by name)");
  cmd->add_option("--reserved-rows", o->reserved_rows,
                  "Leading rows that are not positions (RoBERTa, BART: 2)")
      ->check(whole_number());
  cmd->add_option("--dtype", o->dtype, "Output dtype: f32, f64, f16, bf16 (default: input's)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  cmd->add_option("--initializer", o->resize.initializer, "random: distribution of new rows")
      ->check(CLI::IsMember({"normal", "scaled-normal", "glorot-uniform", "zeros", "sinusoidal"}));
  cmd->add_option("--std", o->resize.stddev, "random: standard deviation of new rows")
      ->check(positive_finite());
  cmd->add_option("--seed", o->resize.seed, "random: seed of new rows")->check(whole_number());
  cmd->callback([o] { run_resize(*o); });
}

}  // namespace posemb::cli
