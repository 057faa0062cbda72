// lab/train/train_until.hpp: a run trained up to a step, with checkpoints along the way
// (`posemb train`).
//
//   // `posemb train --init-from CK --steps 500`: the checkpoint's run with the flags given
//   lab::RunOverrides ov;  ov.values.train.steps = 500;  ov.fields = {"train.steps"};
//   lab::Trainer tr = lab::Trainer::from_checkpoint("CK", ov, "", comm);  // CK read once
//   lab::TrainDone done = lab::train_until(tr, {.until = 500, .checkpoint = "out/ck"}, {});
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "lab/train/trainer.hpp"

namespace posemb::lab {

struct TrainPlan {
  std::size_t until = 0;             // the step to stop at (at most the run's steps)
  std::size_t checkpoint_every = 0;  // also save every this many steps (0: only at the end)
  std::string checkpoint;            // where Trainer::save writes
};

struct TrainDone {
  std::size_t first_step = 0, last_step = 0;
  double seconds = 0.0;
  double tokens_per_second = 0.0;  // counting the tokens of the task's longest training row
  double last_loss = 0.0;
};

// Steps tr until plan.until, saving as planned and at the end; on_step (may be empty) after each
// step. Collective like Trainer::train_step and save.
TrainDone train_until(Trainer& tr, const TrainPlan& plan,
                      const std::function<void(std::size_t step, double loss)>& on_step);

}  // namespace posemb::lab
