// One run trained up to a step, with its checkpoints (lab/train/train_until.hpp).
#include "lab/train/train_until.hpp"

#include <chrono>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "lab/train/run.hpp"

namespace posemb::lab {
namespace {

// A failed step's message, with what is on disk: the checkpoint this call wrote last, if any.
std::string with_saved(const char* what, const TrainPlan& plan, std::size_t saved_step) {
  std::string m = what;
  if (saved_step != 0) {
    m += "; the checkpoint of step " + std::to_string(saved_step) + " (" + plan.checkpoint +
         ") is intact";
  } else {
    m += "; no checkpoint was written by this run";
  }
  return m;
}

}  // namespace

TrainDone train_until(Trainer& tr, const TrainPlan& plan,
                      const std::function<void(std::size_t step, double loss)>& on_step) {
  const auto& cfg = tr.config();
  TrainDone done;
  done.first_step = tr.step();
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t saved = 0;  // the step of the last checkpoint written here (0: none)
  while (tr.step() < plan.until) {
    try {
      done.last_loss = tr.train_step();
    } catch (const JobFailure& e) {  // every rank, the same message
      throw JobFailure(with_saved(e.what(), plan, saved));
    } catch (const std::runtime_error& e) {
      // The trainer's own stops (a non-finite loss or update) are plain runtime_errors; any
      // other type (a communication or I/O failure) goes on as it is.
      if (typeid(e) != typeid(std::runtime_error)) throw;
      throw std::runtime_error(with_saved(e.what(), plan, saved));
    }
    if (on_step) on_step(tr.step(), done.last_loss);
    if (plan.checkpoint_every != 0 && tr.step() % plan.checkpoint_every == 0) {
      tr.save(plan.checkpoint);
      saved = tr.step();
    }
  }
  tr.save(plan.checkpoint);
  done.last_step = tr.step();
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens = static_cast<double>((done.last_step - done.first_step) * cfg.train.batch *
                                            run_train_tokens(cfg));
  done.tokens_per_second = done.seconds > 0 ? tokens / done.seconds : 0.0;
  return done;
}

}  // namespace posemb::lab
