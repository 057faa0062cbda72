// The lab's run flags, declared once (tools/posemb/experiment/lab_flags.hpp).
#include "lab_flags.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"

namespace posemb::cli {
namespace {

namespace lim = lab::limits;

// In `posemb sweep`: one value for every run, a list (an axis of the grid), or not a flag (the
// sweep's --seeds replaces --seed).
enum class InSweep { single, axis, replaced };

// One flag: its name, the config field it sets, its help, and how it binds (a value of the
// run's choices; a list of the sweep's axes).
struct LabFlag {
  const char* name;
  const char* field;
  std::string (*help)();
  CLI::Option* (*add)(CLI::App* cmd, LabFlags& f, const std::string& help);
  InSweep in_sweep = InSweep::single;
  CLI::Option* (*add_axis)(CLI::App* cmd, lab::SweepAxes& a, const std::string& help) = nullptr;
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

template <class T>
CLI::Option* list(CLI::App* cmd, const char* name, std::vector<T>& values,
                  const std::string& help) {
  return cmd->add_option(name, values, help + " (a comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
}

// The table, in --help order. (The member each flag binds is named in its two binders.)
constexpr LabFlag kLabFlags[] = {
    {"--task", "task.kind", [] { return "Task: " + lab::task_rules(); },
     [](CLI::App* c, LabFlags& f, const std::string&) { return add_task_flag(c, f.task); },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--task", a.task, h)->check(CLI::IsMember(lab::task_name_list()));
     }},
    {"--corpus", "task.corpus",
     [] {
       return std::string(
           "Text task: the corpus, any file (default: Moby-Dick, installed by `bash "
           "scripts/setup.sh corpus`; its last 10% is the validation text)");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--corpus", f.run.task.corpus, h);
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--corpus", a.corpus, h);
     }},
    {"--alphabet", "task.alphabet", [] { return std::string("Symbols in the task's alphabet"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--alphabet", f.run.task.alphabet, h)
           ->check(within(lim::alphabet))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--alphabet", a.alphabet, h)->check(within(lim::alphabet));
     }},
    {"--train-len", "task.train_len",
     [] {
       return std::string(
           "Longest training instance n (n uniform in [1, train-len]); text: the window, L bytes");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--train-len", f.run.task.train_len, h)
           ->check(within(lim::train_len))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--train-len", a.train_len, h)->check(within(lim::train_len));
     }},
    {"--pe", "model.pe", encoding_help,
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--pe", f.pe, h)
           ->check(CLI::IsMember(lab::encoding_name_list()))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--pe", a.pe, h)->check(CLI::IsMember(lab::encoding_name_list()));
     }},
    {"--max-seq-len", "model.max_seq_len",
     [] { return std::string("Rows of the learned table (default: the encoding's, see --pe)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--max-seq-len", f.max_seq_len, h)->check(within(lim::max_seq_len));
     }},
    {"--num-buckets", "model.relative_bias.num_buckets",
     [] {
       return std::string(
           "Buckets of a learned relative bias (T5's relative_attention_num_buckets; default: "
           "min(32, the training rows' tokens))");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--num-buckets", f.relative_bias.num_buckets, h)
           ->check(within(lim::num_buckets));
     }},
    {"--max-distance", "model.relative_bias.max_distance",
     [] {
       return std::string(
           "Distance where a learned relative bias's log-spaced buckets end, every farther key "
           "sharing the last one (T5's relative_attention_max_distance; default: the training "
           "rows' tokens, so that every bucket is trained)");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--max-distance", f.relative_bias.max_distance, h)
           ->check(within(lim::max_distance));
     }},
    {"--d-model", "model.d_model", [] { return std::string("Model width"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--d-model", f.run.model.d_model, h)
           ->check(within(lim::d_model))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--d-model", a.d_model, h)->check(within(lim::d_model));
     }},
    {"--layers", "model.n_layers", [] { return std::string("Transformer blocks"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--layers", f.run.model.n_layers, h)
           ->check(within(lim::n_layers))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--layers", a.layers, h)->check(within(lim::n_layers));
     }},
    {"--heads", "model.n_heads",
     [] { return std::string("Attention heads (must divide --d-model)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--heads", f.run.model.n_heads, h)
           ->check(within(lim::n_heads))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--heads", a.heads, h)->check(within(lim::n_heads));
     }},
    {"--d-ff", "model.d_ff", [] { return std::string("MLP hidden width (default 4 * d-model)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--d-ff", f.d_ff, h)->check(within(lim::d_ff));
     }},
    {"--rope-base", "model.rope_base", [] { return std::string("Rotary embedding base"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--rope-base", f.run.model.rope_base, h)
           ->check(within(lim::positive))
           ->capture_default_str();
     }},
    {"--init-std", "model.init_std",
     [] { return std::string("Std of the N(0, std) weight initialization"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--init-std", f.run.model.init_std, h)
           ->check(within(lim::init_std))
           ->capture_default_str();
     }},
    {"--embed-init-std", "model.embed_init_std",
     [] {
       return std::string(
           "Std of the token embedding's N(0, std) initialization (default: 1 for sinusoidal, "
           "whose encoding has unit-size entries; 0.02 otherwise, GPT-2's)");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--embed-init-std", f.run.model.embed_init_std, h)
           ->check(within(lim::init_std));
     }},
    {"--batch", "train.batch", [] { return std::string("Sequences per step"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--batch", f.run.train.batch, h)
           ->check(within(lim::batch))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--batch", a.batch, h)->check(within(lim::batch));
     }},
    {"--micro-batch", "train.micro_batch",
     [] {
       return std::string(
           "Sequences per micro-batch (micro-batches run in parallel; results depend on this, "
           "never on --threads)");
     },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--micro-batch", f.run.train.micro_batch, h)
           ->check(within(lim::micro_batch))
           ->capture_default_str();
     }},
    {"--steps", "train.steps", [] { return std::string("Optimizer steps"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--steps", f.run.train.steps, h)
           ->check(within(lim::steps))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--steps", a.steps, h)->check(within(lim::steps));
     }},
    {"--lr", "train.lr", [] { return std::string("Peak AdamW learning rate"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--lr", f.run.train.lr, h)
           ->check(within(lim::lr))
           ->capture_default_str();
     },
     InSweep::axis,
     [](CLI::App* c, lab::SweepAxes& a, const std::string& h) {
       return list(c, "--lr", a.lr, h)->check(within(lim::lr));
     }},
    {"--warmup", "train.warmup",
     [] { return std::string("Linear warmup steps (then cosine decay)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--warmup", f.run.train.warmup, h)
           ->check(within(lim::warmup))
           ->capture_default_str();
     }},
    {"--min-lr-ratio", "train.min_lr_ratio",
     [] { return std::string("Final lr as a fraction of --lr"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--min-lr-ratio", f.run.train.min_lr_ratio, h)
           ->check(within(lim::min_lr_ratio))
           ->capture_default_str();
     }},
    {"--weight-decay", "train.weight_decay",
     [] { return std::string("AdamW decoupled weight decay"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--weight-decay", f.run.train.weight_decay, h)
           ->check(within(lim::non_negative))
           ->capture_default_str();
     }},
    {"--beta1", "train.beta1", [] { return std::string("AdamW beta1"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--beta1", f.run.train.beta1, h)
           ->check(within(lim::beta))
           ->capture_default_str();
     }},
    {"--beta2", "train.beta2", [] { return std::string("AdamW beta2"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--beta2", f.run.train.beta2, h)
           ->check(within(lim::beta))
           ->capture_default_str();
     }},
    {"--grad-clip", "train.grad_clip",
     [] { return std::string("Global gradient-norm clip (0: off)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--grad-clip", f.run.train.grad_clip, h)
           ->check(within(lim::non_negative))
           ->capture_default_str();
     }},
    {"--seed", "train.seed", [] { return std::string("Seed of the initialization and the data"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--seed", f.run.train.seed, h)
           ->check(whole_number())
           ->capture_default_str();
     },
     InSweep::replaced},
    {"--threads", "", [] { return std::string("Threads (default: all cores; OMP_NUM_THREADS)"); },
     [](CLI::App* c, LabFlags& f, const std::string& h) {
       return c->add_option("--threads", f.threads, h)->check(CLI::Range(1, 1024));
     }},
};

// Fields that other flags of the lab's commands set: the vocabulary follows the alphabet, and
// the RoPE scaling flags are lab_options.hpp's.
const FlagNames kOtherFields = {
    {"model.vocab_size", "--alphabet"},
    {"model.rope_scaling", "--rope-scaling"},
    {"model.rope_factor", "--rope-factor"},
};

}  // namespace

CLI::Option* add_task_flag(CLI::App* cmd, std::string& task) {
  return cmd->add_option("--task", task, "Task: " + lab::task_rules())
      ->check(CLI::IsMember(lab::task_name_list()))
      ->capture_default_str();
}

void add_lab_flags(CLI::App* cmd, LabFlags& f, lab::SweepAxes* axes) {
  for (const LabFlag& flag : kLabFlags) {
    const std::string help = flag.help();
    if (axes != nullptr && flag.in_sweep == InSweep::replaced) continue;
    if (axes != nullptr && flag.in_sweep == InSweep::axis) {
      flag.add_axis(cmd, *axes, help);
    } else {
      flag.add(cmd, f, help);
    }
  }
}

lab::RunConfig finish_lab_flags(const LabFlags& f) {
  try {
    return lab::complete_run(f);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
}

std::string field_of_flag(const std::string& flag) {
  for (const LabFlag& f : kLabFlags) {
    if (flag == f.name) return f.field;
  }
  return "";
}

UsageError usage_error(const lab::ConfigError& e, const FlagNames& extra) {
  std::vector<std::string> flags;
  for (const auto& field : e.fields()) {
    std::string flag;
    if (const auto it = extra.find(field); it != extra.end()) {
      flag = it->second;
    } else if (const auto jt = kOtherFields.find(field); jt != kOtherFields.end()) {
      flag = jt->second;
    } else {
      for (const LabFlag& f : kLabFlags) {
        if (field == f.field) flag = f.name;
      }
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

}  // namespace posemb::cli
