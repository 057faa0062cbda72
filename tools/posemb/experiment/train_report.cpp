#include "train_report.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "lab/encodings/registry.hpp"
#include "lab_options.hpp"
#include "posemb/errors.hpp"

namespace posemb::cli {

void print_train_start(lab::Trainer& tr, std::size_t until, int ranks) {
  const auto& cfg = tr.config();
  const bool text = !cfg.task.corpus_identity.empty();
  fmt::print(
      "posemb train: {} on {} ({}, train_len {}), pe {}{}, {} layers, d_model "
      "{}, {} heads, {} parameters; steps {}..{} of {}, batch {}\n",
      "the lab GPT", cfg.task.kind,
      text ? "corpus " + cfg.task.corpus_identity.text()
           : fmt::format("alphabet {}", cfg.task.alphabet),
      cfg.task.train_len, cfg.model.pe,
      tr.model().encoding_spec().has_table ? fmt::format(" ({} table rows)", cfg.model.max_seq_len)
                                           : buckets_text(cfg.model, " (", ")"),
      cfg.model.n_layers, cfg.model.d_model, cfg.model.n_heads, tr.model().total_elements(),
      tr.step(), until, cfg.train.steps, cfg.train.batch);
  if (!tr.lineage().empty()) fmt::print("lineage: {}\n", tr.lineage());
  if (ranks > 1) {
    fmt::print("data parallel: {} ranks share {} micro-batches of {} sequences a step\n", ranks,
               tr.micro_batches(), std::min(cfg.train.micro_batch, cfg.train.batch));
  }
}

void print_train_done(const lab::TrainDone& done, const std::string& checkpoint) {
  fmt::print(
      "trained steps {}..{} in {:.2f} s ({:.0f} tokens/s counting the tokens of the longest "
      "training row per sequence), last loss {:.5f}\n",
      done.first_step, done.last_step, done.seconds, done.tokens_per_second, done.last_loss);
  fmt::print("checkpoint: {}\n", quote_untrusted(checkpoint));
}

}  // namespace posemb::cli
