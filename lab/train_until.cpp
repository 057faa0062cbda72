// One run trained up to a step, with its checkpoints (lab/experiment.hpp).
#include <chrono>

#include "lab/experiment.hpp"

namespace posemb::lab {

TrainDone train_until(Trainer& tr, const TrainPlan& plan,
                      const std::function<void(std::size_t step, double loss)>& on_step) {
  const auto& cfg = tr.config();
  TrainDone done;
  done.first_step = tr.step();
  const auto t0 = std::chrono::steady_clock::now();
  while (tr.step() < plan.until) {
    done.last_loss = tr.train_step();
    if (on_step) on_step(tr.step(), done.last_loss);
    if (plan.checkpoint_every != 0 && tr.step() % plan.checkpoint_every == 0) {
      tr.save(plan.checkpoint);
    }
  }
  tr.save(plan.checkpoint);
  done.last_step = tr.step();
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens = static_cast<double>((done.last_step - done.first_step) * cfg.train.batch *
                                            input_len(cfg.task.train_len));
  done.tokens_per_second = done.seconds > 0 ? tokens / done.seconds : 0.0;
  return done;
}

}  // namespace posemb::lab
