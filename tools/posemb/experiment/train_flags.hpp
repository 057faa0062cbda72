// tools/posemb/experiment/train_flags.hpp: the flags of `posemb train` and the trainer they
// start: from the seed, resumed (--resume), or a new run from a checkpoint's weights
// (--init-from, the lab's merge rules).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lab/train/trainer.hpp"
#include "lab_options.hpp"

namespace posemb::cli {

struct TrainOptions {
  LabFlags lab;
  std::string out = "train-out";
  std::string resume;
  std::string init_from;
  std::string table;
  std::size_t checkpoint_every = 200;
  std::size_t stop_after = 0;
  std::size_t eval_max = 0;
  std::size_t eval_samples = 100;
  bool quiet = false;
  bool force = false;  // replace the run in --out
  double peer_timeout = 600;
  RopeScalingFlags rope;                // --rope-scaling, --rope-factor (with --init-from)
  std::vector<CLI::Option*> run_flags;  // settings a resumed run takes from its checkpoint
  CLI::Option* steps_flag = nullptr;
  CLI::Option* out_flag = nullptr;  // not given with --resume: the resumed checkpoint's folder
};

// Prepares --out on rank 0 (every rank fails if it cannot): an --out folder holding another run
// is refused, unless --force (replace it) or it is the folder of the checkpoint --resume
// continues.
OutputFolder prepare_train_output(const TrainOptions& o, lab::Communicator& comm);

// The trainer the flags ask for; UsageError for flags that contradict each other or the
// checkpoint.
std::unique_ptr<lab::Trainer> make_trainer(TrainOptions& o, lab::Communicator& comm);

}  // namespace posemb::cli
