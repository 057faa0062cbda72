#include "train_flags.hpp"

#include <filesystem>
#include <system_error>

#include "lab/config.hpp"
#include "lab/train/run.hpp"
#include "posemb/errors.hpp"

namespace posemb::cli {
namespace {

// The new run of --init-from: the checkpoint's settings, then every task and training flag
// given (the lab's rules, lab::merge_run); a model flag is a usage error.
std::unique_ptr<lab::Trainer> init_from(const TrainOptions& o, lab::Communicator& comm) {
  lab::RunOverrides ov;
  ov.values = o.lab.run;
  for (const auto* opt : o.run_flags) {
    if (opt->count() == 0) continue;
    const std::string field = field_of_flag(opt->get_name());
    if (!lab::overridable_from_checkpoint(field)) {
      throw UsageError(opt->get_name() +
                       " cannot be combined with --init-from: the model's shape and encoding "
                       "come from the checkpoint (its table's rows from --table or the "
                       "checkpoint; posemb resize makes a longer one)");
    }
    ov.fields.push_back(field);
  }
  if (o.steps_flag->count() > 0) ov.fields.emplace_back("train.steps");
  ov.rope_scaling = rope_scaling_request(o.rope);
  try {
    ov.values.task.kind = o.lab.task;
    return std::make_unique<lab::Trainer>(
        lab::Trainer::from_checkpoint(o.init_from, ov, o.table, comm));
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
}

// --table, --resume and --init-from with each other and with the run flags.
void check_combinations(const TrainOptions& o) {
  if (!o.table.empty() && o.init_from.empty()) {
    throw UsageError("--table needs --init-from: it replaces the learned table of that checkpoint");
  }
  if (o.rope.method_opt->count() + o.rope.factor_opt->count() > 0 && o.init_from.empty()) {
    throw UsageError(
        "--rope-scaling and --rope-factor need --init-from: they fine-tune a rope checkpoint "
        "with a scaling of its trained length");
  }
  if (!o.resume.empty() && !o.init_from.empty()) {
    throw UsageError(
        "--resume and --init-from exclude each other: --resume continues a run, "
        "--init-from starts a new one from a checkpoint's weights");
  }
  if (!o.resume.empty()) {
    for (const auto* opt : o.run_flags) {
      if (opt->count() > 0) {
        throw UsageError(opt->get_name() +
                         " cannot be combined with --resume: a resumed run "
                         "takes its settings from the checkpoint (only --steps, --threads, "
                         "--out, --peer-timeout and the checkpoint flags may be given)");
      }
    }
  }
}

}  // namespace

OutputFolder prepare_train_output(const TrainOptions& o, lab::Communicator& comm) {
  namespace fs = std::filesystem;
  // The folder as the user would type it again (quoted when the shell would need it).
  const bool plain = !o.out.empty() && o.out.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
                                           "KLMNOPQRSTUVWXYZ0123456789._/+-") == std::string::npos;
  OutputRules rules = other_run_rules(
      o.force, ", or --resume " + (plain ? o.out : quote_untrusted(o.out)) + " to continue it");
  if (!o.resume.empty() && !o.force) {
    const fs::path own = fs::path(o.resume).parent_path();
    std::error_code ec;
    if (fs::equivalent(own.empty() ? fs::path(".") : own, o.out, ec)) {
      rules.other_run = OutputRules::OtherRun::allow;  // the resumed run goes on in its folder
    }
  }
  OutputFolder folder;
  comm.all_or_none("train: preparing the output folder", [&] {
    if (comm.rank() == 0) folder = prepare_output_dir(o.out, {kCheckpointFile}, "train", rules);
  });
  return folder;
}

std::unique_ptr<lab::Trainer> make_trainer(TrainOptions& o, lab::Communicator& comm) {
  check_combinations(o);
  // What the run reads is recorded, and its output may not replace it (prepare_output_dir);
  // a resumed run goes on writing the checkpoint it read.
  protect_read_files(o.resume.empty());
  if (!o.init_from.empty()) return init_from(o, comm);
  const lab::RunConfig run = finish_lab_flags(o.lab);
  try {  // the run's memory, then its work (limits::train_work), before anything is built
    if (o.resume.empty()) return std::make_unique<lab::Trainer>(run, comm);
    auto tr = std::make_unique<lab::Trainer>(lab::Trainer::load(o.resume, comm));
    if (o.steps_flag->count() > 0) tr->set_total_steps(run.train.steps);
    return tr;
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
}

}  // namespace posemb::cli
