// tools/posemb/experiment/train_report.hpp: what `posemb train` prints before and after
// training (rank 0, without --quiet).
#pragma once

#include <cstddef>
#include <string>

#include "lab/train/train_until.hpp"
#include "lab/train/trainer.hpp"

namespace posemb::cli {

// The run: task, encoding, model size, the steps to train, the lineage, the ranks.
void print_train_start(lab::Trainer& tr, std::size_t until, int ranks);
// The steps trained, the time and throughput, the last loss, the checkpoint.
void print_train_done(const lab::TrainDone& done, const std::string& checkpoint);

}  // namespace posemb::cli
