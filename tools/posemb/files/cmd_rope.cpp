// `posemb rope CONFIG.json [--seq-len N] [--json] [--precision]`: a model's rotary embedding as
// its config.json describes it (posemb/rope_config.hpp), pair by pair; --precision adds the
// angle errors of float32, bfloat16 and float16 angles (posemb/rope_precision.hpp).
// `posemb rope CONFIG.json --set TYPE --factor F [...] -o OUT.json`: the config with a new
// rope_scaling block, written atomically.
#include <fmt/core.h>

#include <optional>
#include <string>

#include "cli.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "posemb/rope_config.hpp"
#include "posemb/rope_precision.hpp"
#include "rope_report.hpp"
#include "table_report.hpp"

namespace posemb::cli {
namespace {

struct RopeCliOptions {
  std::string config;
  std::size_t seq_len = 0;
  bool json = false;
  bool precision = false;
  double threshold = 1e-3;
  std::string set;
  std::string out;
  RopeScalingEdit edit;
};

void run_set(const RopeCliOptions& o) {
  if (o.out.empty()) throw UsageError("rope: --set writes a new config: give -o OUT.json");
  refuse_output_is_named_input(o.config, o.out, "rope --set");
  if (o.json || o.precision || o.seq_len != 0) {
    throw UsageError(
        "rope: --json, --precision and --seq-len describe a config; run them on "
        "the written one");
  }
  RopeScalingEdit edit = o.edit;
  edit.type = *rope_scaling_type_named(o.set);  // CLI11 checked the name
  try {
    validate_rope_scaling_edit(edit);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("rope --set: ") + e.what());
  }
  EditedRopeConfig r;
  try {
    r = set_rope_scaling(o.config, edit);
  } catch (const std::invalid_argument& e) {  // the flags' values; a bad file stays a failure
    throw UsageError(std::string("rope --set: ") + e.what());
  }
  refuse_file_output_over_input(o.out, "rope --set");  // after set_rope_scaling read the config
  for (const std::string& w : r.config.warnings) warn(w);
  write_file_atomically(o.out, "posemb rope", r.text);
  const double factor = edit.type == RopeScalingType::none ? 1.0 : edit.factor;
  fmt::print(
      "{}", rope_set_report(quote_untrusted(o.out), r.keys,
                            o.set == "default" ? "default (no scaling)" : o.set, r.config, factor));
}

void run_rope(const RopeCliOptions& o) {
  if (!o.set.empty()) return run_set(o);
  const RopeScalingEdit& e = o.edit;
  if (!o.out.empty() || e.factor != 0.0 || e.original_max_position_embeddings ||
      e.low_freq_factor || e.high_freq_factor || e.beta_fast || e.beta_slow || e.attention_factor ||
      e.mscale || e.mscale_all_dim) {
    throw UsageError("rope: -o, --factor and the other scaling parameters go with --set TYPE");
  }
  const RopeConfig c = read_rope_config(o.config);
  for (const std::string& w : c.warnings) warn(w);
  const Rope rope = c.rope(RopeLayout::half, o.seq_len);
  RopeReport report{o.config, &c, &rope, o.seq_len, {}, 0, o.threshold};
  if (o.precision) {
    report.precision_positions = o.seq_len != 0 ? o.seq_len : c.extended_length();
    refuse_precision_work(report);  // before it starts
    report.precision = rope_angle_precision(rope, report.precision_positions, o.threshold);
  }
  fmt::print("{}", o.json ? rope_report_json(report) : rope_report_text(report));
}

// The flags of --set, each mapped to its field of the edit.
void add_edit_options(CLI::App* cmd, RopeCliOptions& o) {
  cmd->add_option("--factor", o.edit.factor, "--set: the scale factor s (new length / trained)")
      ->check(positive_finite());
  cmd->add_option("--original-length", o.edit.original_max_position_embeddings,
                  "--set yarn, llama3: the trained length L0 written into the block (default: "
                  "the config's)")
      ->check(whole_number());
  const struct {
    const char* flag;
    std::optional<double>* field;
    const char* help;
  } params[] = {
      {"--low-freq-factor", &o.edit.low_freq_factor, "--set llama3 (default 1)"},
      {"--high-freq-factor", &o.edit.high_freq_factor, "--set llama3 (default 4)"},
      {"--beta-fast", &o.edit.beta_fast, "--set yarn (default 32)"},
      {"--beta-slow", &o.edit.beta_slow, "--set yarn (default 1)"},
      {"--attention-factor", &o.edit.attention_factor, "--set yarn (default 0.1 ln s + 1)"},
      {"--mscale", &o.edit.mscale, "--set yarn (DeepSeek's; with --mscale-all-dim)"},
      {"--mscale-all-dim", &o.edit.mscale_all_dim, "--set yarn (with --mscale)"},
  };
  for (const auto& p : params) cmd->add_option(p.flag, *p.field, p.help)->check(positive_finite());
}

}  // namespace

void register_rope_command(CLI::App& app) {
  auto o = std::make_shared<RopeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "rope",
      "A model's rotary embedding from its config.json (scaling, per-pair frequencies, "
      "--precision of half-precision angles); --set TYPE writes the config with a new "
      "rope_scaling block");
  cmd->add_option("config", o->config, "A Hugging Face config.json")
      ->required()
      ->check(non_empty());
  cmd->add_option("--seq-len", o->seq_len,
                  "The sequence length the frequencies are for (dynamic, longrope; default: the "
                  "trained length); with --precision, the positions checked (default: the "
                  "extended length)")
      ->check(whole_number(std::size_t{1} << 40));
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->add_flag("--precision", o->precision,
                "Add the largest angle error of float32, bfloat16 and float16 angles");
  cmd->add_option("--threshold", o->threshold,
                  "--precision: report the first position whose error exceeds this (radians, "
                  "default 1e-3)")
      ->check(positive_finite());
  std::vector<std::string> types;
  for (const auto& [t, name] : kRopeScalingNames) {
    if (t != RopeScalingType::longrope && t != RopeScalingType::ntk) types.emplace_back(name);
  }
  cmd->add_option("--set", o->set,
                  "Write the config with a new rope_scaling block: default (none), linear, "
                  "dynamic, yarn, llama3 (into rope_parameters too when the config has it; "
                  "refused when the two disagree); only the block's text changes")
      ->check(CLI::IsMember(types));
  cmd->add_option("-o,--output", o->out, "--set: the config to write")->check(non_empty());
  add_edit_options(cmd, *o);
  cmd->callback(read_files_protected([o] { run_rope(*o); }));
}

}  // namespace posemb::cli
