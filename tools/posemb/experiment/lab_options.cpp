#include "lab_options.hpp"

#include <omp.h>

#include <algorithm>

#include "cli.hpp"

namespace posemb::cli {

void add_lab_flags(CLI::App* cmd, LabFlags& f) {
  auto& r = f.run;
  cmd->add_option("--task", f.task, "Task: copy or reverse")
      ->check(CLI::IsMember({"copy", "reverse"}))
      ->capture_default_str();
  cmd->add_option("--alphabet", r.task.alphabet, "Symbols in the task's alphabet")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_option("--train-len", r.task.train_len,
                  "Longest training instance n (n uniform in [1, train-len])")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--pe", f.pe,
                  "Positional encoding: learned, learned-randomized, sinusoidal, "
                  "rope, none")
      ->check(CLI::IsMember({"learned", "learned-randomized", "sinusoidal", "rope", "none"}))
      ->capture_default_str();
  cmd->add_option("--max-seq-len", f.max_seq_len,
                  "Rows of the learned table (default: 2*train-len+2 for learned, "
                  "max(256, 4x that) for learned-randomized)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--d-model", r.model.d_model, "Model width")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  cmd->add_option("--layers", r.model.n_layers, "Transformer blocks")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--heads", r.model.n_heads, "Attention heads (must divide --d-model)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--d-ff", f.d_ff, "MLP hidden width (default 4 * d-model)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--rope-base", r.model.rope_base, "Rotary embedding base")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--init-std", r.model.init_std, "Std of the N(0, std) weight initialization")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--embed-init-std", r.model.embed_init_std,
                  "Std of the token embedding's N(0, std) initialization (default: 1 for "
                  "sinusoidal, whose encoding has unit-size entries; 0.02 otherwise, GPT-2's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", r.train.batch, "Sequences per step")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--micro-batch", r.train.micro_batch,
                  "Sequences per micro-batch (micro-batches run in parallel; results depend on "
                  "this, never on --threads)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--steps", r.train.steps, "Optimizer steps")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--lr", r.train.lr, "Peak AdamW learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup", r.train.warmup, "Linear warmup steps (then cosine decay)")
      ->capture_default_str();
  cmd->add_option("--min-lr-ratio", r.train.min_lr_ratio, "Final lr as a fraction of --lr")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--weight-decay", r.train.weight_decay, "AdamW decoupled weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--beta1", r.train.beta1, "AdamW beta1")->capture_default_str();
  cmd->add_option("--beta2", r.train.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--grad-clip", r.train.grad_clip, "Global gradient-norm clip (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", r.train.seed, "Seed of the initialization and the data")
      ->capture_default_str();
  cmd->add_option("--threads", f.threads, "OpenMP threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
}

std::size_t default_table_rows(lab::PeKind pe, std::size_t train_len) {
  const std::size_t need = lab::input_len(train_len);
  if (pe == lab::PeKind::learned) return need;
  if (pe == lab::PeKind::learned_randomized) return std::max<std::size_t>(256, 4 * need);
  return 0;
}

lab::RunConfig finish_lab_flags(LabFlags& f) {
  auto r = f.run;
  r.task.kind = lab::parse_task_kind(f.task);
  r.model.pe = lab::parse_pe_kind(f.pe);
  if (r.model.embed_init_std <= 0.0) r.model.embed_init_std = default_embed_init_std(r.model.pe);
  r.model.d_ff = f.d_ff != 0 ? f.d_ff : 4 * r.model.d_model;
  r.model.vocab_size = r.task.vocab_size();
  if (r.model.d_model % r.model.n_heads != 0) {
    throw UsageError("--d-model " + std::to_string(r.model.d_model) +
                     " is not a multiple of --heads " + std::to_string(r.model.n_heads));
  }
  if (r.model.pe == lab::PeKind::rope && r.model.head_dim() % 2 != 0) {
    throw UsageError("--pe rope needs an even head dimension (d-model / heads), got " +
                     std::to_string(r.model.head_dim()));
  }
  if (!lab::has_table(r.model.pe)) {
    if (f.max_seq_len != 0) {
      throw UsageError("--max-seq-len sets the learned table's rows; --pe " + f.pe +
                       " has no table");
    }
    r.model.max_seq_len = 0;
  } else {
    r.model.max_seq_len =
        f.max_seq_len != 0 ? f.max_seq_len : default_table_rows(r.model.pe, r.task.train_len);
    const std::size_t need = lab::input_len(r.task.train_len);
    if (r.model.max_seq_len < need) {
      throw UsageError("--max-seq-len " + std::to_string(r.model.max_seq_len) +
                       " is shorter than the longest training sequence, 2*train-len+2 = " +
                       std::to_string(need));
    }
  }
  if (!(r.train.beta1 >= 0.0f && r.train.beta1 < 1.0f && r.train.beta2 >= 0.0f &&
        r.train.beta2 < 1.0f)) {
    throw UsageError("--beta1 and --beta2 must be in [0, 1)");
  }
  return r;
}

double default_embed_init_std(lab::PeKind pe) {
  return pe == lab::PeKind::sinusoidal ? 1.0 : 0.02;
}

void set_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace posemb::cli
