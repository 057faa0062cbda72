#include "lab_options.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"

namespace posemb::cli {
namespace {

// The lab flags of add_lab_flags by the config field they set.
const FlagNames kLabFlags = {
    {"model.d_model", "--d-model"},
    {"model.n_layers", "--layers"},
    {"model.n_heads", "--heads"},
    {"model.d_ff", "--d-ff"},
    {"model.pe", "--pe"},
    {"model.max_seq_len", "--max-seq-len"},
    {"model.rope_base", "--rope-base"},
    {"model.init_std", "--init-std"},
    {"model.embed_init_std", "--embed-init-std"},
    {"model.vocab_size", "--alphabet"},
    {"task.kind", "--task"},
    {"task.alphabet", "--alphabet"},
    {"task.train_len", "--train-len"},
    {"train.batch", "--batch"},
    {"train.micro_batch", "--micro-batch"},
    {"train.steps", "--steps"},
    {"train.warmup", "--warmup"},
    {"train.lr", "--lr"},
    {"train.min_lr_ratio", "--min-lr-ratio"},
    {"train.weight_decay", "--weight-decay"},
    {"train.beta1", "--beta1"},
    {"train.beta2", "--beta2"},
    {"train.grad_clip", "--grad-clip"},
    {"train.seed", "--seed"},
    {"model.rope_scaling", "--rope-scaling"},
    {"model.rope_factor", "--rope-factor"},
};

std::string encoding_help() {
  std::string s = "Positional encoding:";
  for (const auto* e : lab::encodings()) {
    s += "\n  ";
    s += e->name;
    s += ": ";
    s += e->summary;
  }
  return s;
}

}  // namespace

std::string field_of_flag(const std::string& flag) {
  std::string field;
  for (const auto& [f, name] : kLabFlags) {
    // --alphabet sets task.alphabet (and with it model.vocab_size): the task's field names it.
    if (name == flag && (field.empty() || f.rfind("model.", 0) != 0)) field = f;
  }
  return field;
}

UsageError usage_error(const lab::ConfigError& e, const FlagNames& extra) {
  std::vector<std::string> flags;
  for (const auto& field : e.fields()) {
    std::string flag;
    if (const auto it = extra.find(field); it != extra.end()) {
      flag = it->second;
    } else if (const auto jt = kLabFlags.find(field); jt != kLabFlags.end()) {
      flag = jt->second;
    }
    if (!flag.empty() && std::find(flags.begin(), flags.end(), flag) == flags.end()) {
      flags.push_back(flag);
    }
  }
  std::string msg = e.what();
  if (!flags.empty()) {
    msg += " (flag";
    msg += flags.size() > 1 ? "s " : " ";
    for (std::size_t i = 0; i < flags.size(); ++i) msg += (i ? ", " : "") + flags[i];
    msg += ")";
  }
  return UsageError(msg);
}

void add_lab_flags(CLI::App* cmd, LabFlags& f) {
  namespace lim = lab::limits;
  auto& r = f.run;
  cmd->add_option("--task", f.task, "Task: " + lab::task_rules())
      ->check(CLI::IsMember(lab::task_name_list()))
      ->capture_default_str();
  cmd->add_option("--alphabet", r.task.alphabet, "Symbols in the task's alphabet")
      ->check(within(lim::alphabet))
      ->capture_default_str();
  cmd->add_option("--train-len", r.task.train_len,
                  "Longest training instance n (n uniform in [1, train-len])")
      ->check(within(lim::train_len))
      ->capture_default_str();
  cmd->add_option("--pe", f.pe, encoding_help())
      ->check(CLI::IsMember(lab::encoding_name_list()))
      ->capture_default_str();
  cmd->add_option("--max-seq-len", f.max_seq_len,
                  "Rows of the learned table (default: the encoding's, see --pe)")
      ->check(within(lim::max_seq_len));
  cmd->add_option("--d-model", r.model.d_model, "Model width")
      ->check(within(lim::d_model))
      ->capture_default_str();
  cmd->add_option("--layers", r.model.n_layers, "Transformer blocks")
      ->check(within(lim::n_layers))
      ->capture_default_str();
  cmd->add_option("--heads", r.model.n_heads, "Attention heads (must divide --d-model)")
      ->check(within(lim::n_heads))
      ->capture_default_str();
  cmd->add_option("--d-ff", f.d_ff, "MLP hidden width (default 4 * d-model)")
      ->check(within(lim::d_ff));
  cmd->add_option("--rope-base", r.model.rope_base, "Rotary embedding base")
      ->check(within(lim::positive))
      ->capture_default_str();
  cmd->add_option("--init-std", r.model.init_std, "Std of the N(0, std) weight initialization")
      ->check(within(lim::init_std))
      ->capture_default_str();
  cmd->add_option("--embed-init-std", r.model.embed_init_std,
                  "Std of the token embedding's N(0, std) initialization (default: 1 for "
                  "sinusoidal, whose encoding has unit-size entries; 0.02 otherwise, GPT-2's)")
      ->check(within(lim::init_std));
  cmd->add_option("--batch", r.train.batch, "Sequences per step")
      ->check(within(lim::batch))
      ->capture_default_str();
  cmd->add_option("--micro-batch", r.train.micro_batch,
                  "Sequences per micro-batch (micro-batches run in parallel; results depend on "
                  "this, never on --threads)")
      ->check(within(lim::micro_batch))
      ->capture_default_str();
  cmd->add_option("--steps", r.train.steps, "Optimizer steps")
      ->check(within(lim::steps))
      ->capture_default_str();
  cmd->add_option("--lr", r.train.lr, "Peak AdamW learning rate")
      ->check(within(lim::lr))
      ->capture_default_str();
  cmd->add_option("--warmup", r.train.warmup, "Linear warmup steps (then cosine decay)")
      ->check(within(lim::warmup))
      ->capture_default_str();
  cmd->add_option("--min-lr-ratio", r.train.min_lr_ratio, "Final lr as a fraction of --lr")
      ->check(within(lim::min_lr_ratio))
      ->capture_default_str();
  cmd->add_option("--weight-decay", r.train.weight_decay, "AdamW decoupled weight decay")
      ->check(within(lim::non_negative))
      ->capture_default_str();
  cmd->add_option("--beta1", r.train.beta1, "AdamW beta1")
      ->check(within(lim::beta))
      ->capture_default_str();
  cmd->add_option("--beta2", r.train.beta2, "AdamW beta2")
      ->check(within(lim::beta))
      ->capture_default_str();
  cmd->add_option("--grad-clip", r.train.grad_clip, "Global gradient-norm clip (0: off)")
      ->check(within(lim::non_negative))
      ->capture_default_str();
  cmd->add_option("--seed", r.train.seed, "Seed of the initialization and the data")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--threads", f.threads, "Threads (default: all cores; OMP_NUM_THREADS)")
      ->check(CLI::Range(1, 1024));
}

lab::RunConfig finish_lab_flags(const LabFlags& f) {
  try {
    return lab::complete_run(f);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
}

std::filesystem::path prepare_output_dir(const std::string& dir,
                                         std::initializer_list<const char*> files,
                                         const char* command) {
  const std::filesystem::path path(dir);
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path)) {
    throw std::runtime_error(std::string(command) + ": cannot make the output directory " +
                             quote_untrusted(dir) + ": " +
                             (ec ? ec.message() : std::string("it is not a directory")));
  }
  // The folder takes new files (a temporary made and removed at once, as the atomic writes will
  // make theirs): a run that could not write its results fails here, before it works, also when
  // a permission check (access(2)) would pass, as for root on a read-only file system.
  std::string probe = (path / ".posemb-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw std::runtime_error(
        std::string(command) + ": cannot create files in the output directory " +
        quote_untrusted(dir) + ": " + std::strerror(errno) + "; nothing was done");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  for (const char* name : files) {
    const auto st = std::filesystem::symlink_status(path / name, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
      throw std::runtime_error(std::string(command) + ": " +
                               quote_untrusted((path / name).string()) +
                               " exists and is not a regular file (posemb replaces only regular "
                               "files); nothing was done");
    }
  }
  return path;
}

void set_threads(int threads) {
  if (threads > 0) set_parallel_threads(static_cast<std::size_t>(threads));
}

}  // namespace posemb::cli

namespace posemb::cli {

std::string rope_scaling_method_names() {
  std::string methods;
  for (const auto& m : lab::rope_scaling_methods()) methods += (methods.empty() ? "" : ", ") + m;
  return methods;
}

void add_rope_scaling_flags(CLI::App* cmd, RopeScalingFlags& f, const std::string& when) {
  f.method_opt = cmd->add_option("--rope-scaling", f.method,
                                 "RoPE past its trained length, for a rope checkpoint: " +
                                     rope_scaling_method_names() +
                                     " (the library's methods, posemb/rope_scaling.hpp; "
                                     "the trained length L0 is the checkpoint's, 2 * train_len + "
                                     "2 positions). " +
                                     when)
                     ->check(CLI::IsMember(lab::rope_scaling_methods()));
  f.factor_opt = cmd->add_option("--rope-factor", f.factor,
                                 "The scaling's factor s (needed by every method but none)")
                     ->check(within(lab::limits::rope_factor));
}

std::optional<lab::RopeScalingConfig> rope_scaling_request(const RopeScalingFlags& f) {
  const bool method = f.method_opt->count() > 0, factor = f.factor_opt->count() > 0;
  if (factor && !method) throw UsageError("--rope-factor needs --rope-scaling");
  if (!method) return std::nullopt;
  const bool none = f.method == lab::rope_scaling_methods().front();
  if (!none && !factor) {
    throw UsageError("--rope-scaling " + f.method + " needs --rope-factor (e.g. 2)");
  }
  if (none && factor) throw UsageError("--rope-factor is not used with --rope-scaling " + f.method);
  lab::RopeScalingConfig r;
  r.method = f.method;
  r.factor = none ? 1.0 : f.factor;
  return r;
}

CLI::Validator checkpoint_path() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::file_status st = fs::status(in, ec);
        if (fs::is_directory(st)) {
          const fs::path inside = fs::path(in) / kCheckpointFile;
          if (!fs::is_regular_file(inside, ec)) {
            return quote_untrusted(in) + " is a directory without " + kCheckpointFile +
                   " (give a `posemb train --out` directory or a checkpoint file)";
          }
          in = inside.string();
          return {};
        }
        if (!fs::exists(st)) return quote_untrusted(in) + " does not exist";
        return {};
      },
      "CHECKPOINT");
}

}  // namespace posemb::cli
