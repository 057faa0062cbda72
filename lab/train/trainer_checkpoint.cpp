// The trainer's checkpoints (lab/train/trainer.hpp): save, load (a resumed run) and
// from_checkpoint (a new run from a checkpoint's weights, with a resized table or a RoPE scaling).
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/table_provenance.hpp"

namespace posemb::lab {

void Trainer::save(const std::string& path) {
  if (failed_) {
    throw std::logic_error("Trainer::save: step " + std::to_string(step_ + 1) +
                           " left infinite or NaN parameters; they are not saved (" + path +
                           " is left as it was)");
  }
  share_moments();
  comm_->all_or_none("train: writing the checkpoint", [&] {
    if (comm_->rank() != 0) return;
    try {
      write_checkpoint(path, model_, opt_, cfg_, step_, lineage_);
    } catch (const std::system_error& e) {
      // An I/O failure (a full disk, the file-size limit): the writer's message names the file,
      // what failed and the reason; this names the step whose checkpoint was lost.
      throw std::runtime_error("train: the checkpoint of step " + std::to_string(step_) +
                               " was not written: " + e.what());
    }
  });
}

Trainer Trainer::load(const std::string& path, Communicator& comm) {
  std::optional<Checkpoint> ck;
  comm.all_or_none("train: reading the checkpoint", [&] { ck = read_checkpoint(path); });
  Trainer tr(ck->run, comm);
  comm.all_or_none("train: loading the checkpoint", [&] {
    load_tensors(tr.model_, *ck);
    tr.step_ = ck->step;
    tr.lineage_ = ck->lineage;
    load_optimizer_state(tr.opt_, tr.model_, *ck);
  });
  tr.verify_same_state("train: loading the checkpoint");
  return tr;
}

namespace {

// Throws ConfigError when a model setting of the new run differs from the checkpoint's.
void check_same_model(const ModelConfig& want, const ModelConfig& ck, const std::string& path) {
  auto differ = [&](const char* field, const std::string& a, const std::string& b) {
    if (a == b) return;
    throw ConfigError({std::string("model.") + field},
                      std::string("init from checkpoint: model.") + field + " " + a +
                          " differs from " + path + "'s " + b +
                          "; the model's shape and encoding come from the checkpoint");
  };
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  differ("pe", want.pe, ck.pe);
  differ("vocab_size", std::to_string(want.vocab_size), std::to_string(ck.vocab_size));
  differ("d_model", std::to_string(want.d_model), std::to_string(ck.d_model));
  differ("n_layers", std::to_string(want.n_layers), std::to_string(ck.n_layers));
  differ("n_heads", std::to_string(want.n_heads), std::to_string(ck.n_heads));
  differ("d_ff", std::to_string(want.d_ff), std::to_string(ck.d_ff));
  differ("rope_base", num(want.rope_base), num(ck.rope_base));
  differ("sinusoidal_base", num(want.sinusoidal_base), num(ck.sinusoidal_base));
}

}  // namespace

Trainer Trainer::from_checkpoint(const std::string& path, const RunConfig& settings,
                                 const std::string& table_path, Communicator& comm) {
  return from_checkpoint_with(
      path, [&](const Checkpoint&) { return settings; }, table_path, comm);
}

Trainer Trainer::from_checkpoint(const std::string& path, const RunOverrides& overrides,
                                 const std::string& table_path, Communicator& comm) {
  return from_checkpoint_with(
      path, [&](const Checkpoint& ck) { return merge_run(ck.run, overrides); }, table_path, comm);
}

Trainer Trainer::from_checkpoint_with(const std::string& path,
                                      const std::function<RunConfig(const Checkpoint&)>& settings,
                                      const std::string& table_path, Communicator& comm) {
  // Every rank reads the files (collective: every rank learns when one cannot).
  std::optional<Checkpoint> ck_read;
  RunConfig cfg;
  std::optional<PositionTable> table;
  std::string table_from;
  comm.all_or_none("train: reading the checkpoint to start from", [&] {
    ck_read = read_checkpoint(path);
    const Checkpoint& ck = *ck_read;
    cfg = settings(ck);
    check_same_model(cfg.model, ck.run.model, path);
    cfg.model.init_std = ck.run.model.init_std;
    cfg.model.embed_init_std = ck.run.model.embed_init_std;
    const auto& spec = find_encoding(cfg.model.pe);
    if (!table_path.empty()) {
      if (!spec.has_table) {
        throw std::invalid_argument("init from checkpoint: " + path + " uses " + cfg.model.pe +
                                    ", which has no learned table to replace");
      }
      table = load_position_table(table_path);
      if (table->usable().cols() != cfg.model.d_model) {
        throw std::invalid_argument("init from checkpoint: the table in " + table_path + " has " +
                                    std::to_string(table->usable().cols()) +
                                    " columns, the model's d_model is " +
                                    std::to_string(cfg.model.d_model));
      }
      cfg.model.max_seq_len = table->positions();
      table_from = ", table from " + table_path +
                   (table->provenance.empty() ? std::string() : " (" + table->provenance + ")");
    } else if (spec.has_table) {
      cfg.model.max_seq_len = ck.tensor(std::string(spec.table_tensor)).rows();
      // A checkpoint whose table posemb resized records the resizes (posemb.resizes; the
      // "resize: ..." text of older files): its table's lineage is told.
      if (!recorded_resizes(ck.file.metadata, path).empty()) {
        const auto it = ck.file.metadata.find(std::string(kProvenanceKey));
        table_from = ", its table: " + (it == ck.file.metadata.end() ? "resized" : it->second);
      }
    }
    if (spec.has_table && cfg.model.max_seq_len < run_train_tokens(cfg)) {
      throw ConfigError({"task.train_len"},
                        "init from checkpoint: the learned table has " +
                            std::to_string(cfg.model.max_seq_len) +
                            " rows; training at train_len " + std::to_string(cfg.task.train_len) +
                            " needs " + std::to_string(run_train_tokens(cfg)) + " (" +
                            std::string(find_task(cfg.task.kind).length_rule) +
                            " tokens at n = train_len): resize the table first");
    }
  });
  const Checkpoint& ck = *ck_read;
  Trainer tr(cfg, comm);
  comm.all_or_none("train: loading the checkpoint to start from", [&] {
    load_tensors(tr.model_, ck, table.has_value());
    if (table) {
      const auto slot = tr.model_.encoding().tensors().front();
      copy_into(slot.value, table->usable(), "position table", table_path);
    }
  });
  const std::string here = "init from " + path + " (" + ck.run.model.pe + ", step " +
                           std::to_string(ck.step) + ", seed " + std::to_string(ck.run.train.seed) +
                           ", " + ck.run.task.kind +
                           " n <= " + std::to_string(ck.run.task.train_len) + ")" + table_from +
                           (cfg.model.rope_scaling == ck.run.model.rope_scaling
                                ? std::string()
                                : ", rope scaling " + cfg.model.rope_scaling.text());
  tr.lineage_ = ck.lineage.empty() ? here : ck.lineage + "; " + here;
  tr.verify_same_state("train: starting from the checkpoint");
  return tr;
}

}  // namespace posemb::lab
