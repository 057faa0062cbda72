#include "demo_runner.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "lab/trainer.hpp"
#include "progress.hpp"

namespace posemb::cli {
namespace {

// A run's cost for ordering: steps times tokens per sequence.
double cost(const RunSpec& r) {
  return static_cast<double>(r.run.train.steps) *
         static_cast<double>(lab::input_len(r.run.task.train_len));
}

RunOutcome run_one(const RunSpec& spec, const std::function<void(std::size_t, double)>& stepped) {
  std::unique_ptr<lab::Trainer> tr;
  if (spec.init_from.empty()) {
    tr = std::make_unique<lab::Trainer>(spec.run);
  } else {
    tr = std::make_unique<lab::Trainer>(
        lab::Trainer::from_checkpoint(spec.init_from, spec.run, spec.table));
  }
  const auto& cfg = tr->config();
  RunOutcome out;
  auto probe = [&] {
    out.probes.emplace_back(tr->step(), lab::evaluate(tr->model(), cfg.task, spec.probe));
  };
  if (spec.probe_every != 0) probe();
  double seconds = 0.0;  // training only, probes left out
  while (tr->step() < cfg.train.steps) {
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = tr->train_step();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tr->step() == 1) out.first_loss = loss;
    stepped(1, loss);
    if (spec.probe_every != 0 &&
        (tr->step() % spec.probe_every == 0 || tr->step() == cfg.train.steps)) {
      probe();
    }
  }
  out.train_seconds = seconds;
  out.results = lab::evaluate(tr->model(), cfg.task, spec.eval);
  if (!spec.save.empty()) tr->save(spec.save);
  if (spec.keep_table && tr->model().encoding().learned_table() != nullptr) {
    out.table = Matrix<float>(tr->model().encoding().learned_table()->table());
  }
  return out;
}

}  // namespace

std::vector<RunOutcome> run_all(const std::vector<RunSpec>& runs, std::size_t workers,
                                const std::string& label) {
  std::vector<std::size_t> order(runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost(runs[a]) > cost(runs[b]); });
  std::size_t total = 0;
  for (const auto& r : runs) total += r.run.train.steps;
  std::vector<RunOutcome> out(runs.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;  // guards error, progress and done
  Progress progress(label, total);
  std::size_t done = 0;
  auto stepped = [&](std::size_t steps, double loss) {
    const std::lock_guard<std::mutex> lock(mu);
    done += steps;
    progress.update(done, loss);
  };
  auto worker = [&] {
    omp_set_num_threads(1);  // one thread per run; the runs are the parallelism
    for (std::size_t k = next++; k < order.size() && !failed; k = next++) {
      const std::size_t i = order[k];
      try {
        out[i] = run_one(runs[i], stepped);
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(mu);
        if (!error)
          error = std::make_exception_ptr(std::runtime_error(runs[i].label + ": " + e.what()));
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  const std::size_t n = std::max<std::size_t>(1, std::min(workers, runs.size()));
  for (std::size_t w = 0; w < n; ++w) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace posemb::cli
