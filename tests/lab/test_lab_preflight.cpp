// lab/train/preflight.hpp and lab/ranks/agreement.hpp: the checks made before the work. Ranks as
// threads (thread_group.hpp): ranks given other settings all fail with one message before any run
// trains; a rank whose peer is in another collective (another command) gets an error, never an
// allocation of the size the peer's bytes announce.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/experiment/demo_plan.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/ranks/agreement.hpp"
#include "lab/train/preflight.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "thread_group.hpp"

namespace posemb::lab {
namespace {

using testing::ThreadGroup;

std::string message(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
  return "?";
}

TEST(Preflight, AResumePastItsStepsIsRefused) {
  EXPECT_NO_THROW(check_resume_step(6, 6));
  EXPECT_NO_THROW(check_resume_step(0, 6));
  try {
    check_resume_step(100, 6);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"train.steps"});
    EXPECT_NE(std::string(e.what()).find("at step 100, past the run's 6 steps"), std::string::npos);
  }
}

TEST(Preflight, TheFinalCheckpointMustHoldTheLineageAndTheSettings) {
  EXPECT_NO_THROW(
      check_checkpoint_metadata(std::string(600, 'j'), std::string(kMaxLineageBytes, 'l')));
  EXPECT_THROW(check_checkpoint_metadata("{}", std::string(kMaxLineageBytes + 1, 'l')),
               std::runtime_error);
  EXPECT_THROW(check_checkpoint_metadata(std::string(17 << 20, 'j'), ""), std::runtime_error);
}

TEST(Preflight, ThreadsMustFitTheAddressSpaceLimit) {
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
  if (old.rlim_cur == RLIM_INFINITY) {
    EXPECT_NO_THROW(check_thread_budget(1024, "sweep"));  // no limit set: nothing to check
  }
  // The rule against a 4 GiB limit with 51 MiB in use (given, not set: a sanitizer's shadow
  // memory would not fit under a real limit).
  constexpr std::size_t kLimit = std::size_t{4} << 30, kInUse = std::size_t{51} << 20;
  std::string msg;
  try {
    check_thread_budget(1024, "sweep --parallel-runs", kLimit, kInUse);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("sweep --parallel-runs: 1024 threads need about"), std::string::npos) << msg;
  EXPECT_NE(msg.find("address-space limit"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_thread_budget(2, "sweep --parallel-runs", kLimit, kInUse));
  EXPECT_NO_THROW(check_thread_budget(1, "sweep --parallel-runs", 0, kInUse));  // one: no check
  EXPECT_THROW(check_thread_budget(56, "sweep --parallel-runs", kLimit, kInUse),
               std::runtime_error);  // 4096 - 51 - 16 MiB hold 55 threads of 72 MiB
  EXPECT_NO_THROW(check_thread_budget(55, "sweep --parallel-runs", kLimit, kInUse));
}

std::vector<GridRun> grid(double lr, std::size_t runs) {
  std::vector<GridRun> g(runs);
  for (std::size_t i = 0; i < runs; ++i) {
    g[i].name = "run " + std::to_string(i);
    g[i].run = testing::tiny_run_config("learned", 4, 4, 32);
    g[i].run.train.lr = static_cast<float>(lr);
    g[i].run.train.steps = 2;
  }
  return g;
}

// Training's work (issue 46: work without a bound): steps x batch x 3 forward passes over the
// longest training row, refused past limits::train_work by the constructor, set_total_steps and
// the grid's check, before anything is allocated or trained.
TEST(Preflight, TrainingPastItsWorkLimitIsRefusedBeforeItStarts) {
  // d_model 256 at 64 rows a step: about 1e9 multiply-adds a step, the limit within the steps'
  // reach (1e8), a trainer small enough to build.
  RunConfig r = testing::tiny_run_config("learned", 4, 4, 32);
  r.model.d_model = 256;
  r.train.batch = r.train.micro_batch = 64;
  r.train.steps = 10;
  const double one = Trainer::training_work(r) / 10.0;  // one step
  EXPECT_DOUBLE_EQ(one, static_cast<double>(r.train.batch) * 3.0 *
                            Model::forward_work(r.model, run_train_tokens(r)));
  EXPECT_DOUBLE_EQ(Trainer::training_work(r, 4), 6.0 * one);  // resumed at step 4
  EXPECT_EQ(Trainer::training_work(r, 10), 0.0);
  EXPECT_EQ(Trainer::training_work(r, 11), 0.0);
  EXPECT_GT(Model::forward_work(r.model, 9), Model::forward_work(r.model, 8));
  EXPECT_NO_THROW(Trainer::check_training_work(r));
  // The most steps within the limit, and one more.
  r.train.steps = static_cast<std::size_t>(limits::train_work.max / one);
  while (Trainer::training_work(r) > limits::train_work.max) --r.train.steps;
  EXPECT_NO_THROW(Trainer::check_training_work(r));
  r.train.steps += 1;
  while (Trainer::training_work(r) <= limits::train_work.max) ++r.train.steps;
  ASSERT_LE(r.train.steps, limits::steps.max) << "the limit is out of the steps' reach here";
  try {
    Trainer::check_training_work(r);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), (std::vector<std::string>{"train.steps", "train.batch"}));
    EXPECT_NE(std::string(e.what()).find(std::to_string(r.train.steps) + " steps of " +
                                         std::to_string(r.train.batch) + " rows"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("more than the 1e+16 a run may take"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Trainer{r}, ConfigError);                   // before the model is allocated
  EXPECT_NO_THROW(Trainer::check_training_work(r, 0, 2));  // shared among two ranks
  // Resumed: the steps left count (none left: nothing to refuse).
  EXPECT_NO_THROW(Trainer::check_training_work(r, r.train.steps - 1));
  r.train.steps = 10;
  Trainer tr(r);
  EXPECT_THROW(tr.set_total_steps(limits::steps.max), ConfigError);
  EXPECT_EQ(tr.config().train.steps, 10u);  // left as it was
  EXPECT_NO_THROW(tr.set_total_steps(20));
}

TEST(Preflight, AGridRunPastATrainingOrEvaluationLimitIsRefusedByName) {
  auto g = grid(0.003, 3);
  EXPECT_NO_THROW(validate_grid(g));
  g[1].run.train.steps = limits::steps.max;
  g[1].run.train.batch = limits::batch.max;
  try {
    validate_grid(g);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("grid run 1 (run 1): train config:"), std::string::npos)
        << e.what();
  }
  // An encoding computed at any length (a learned table's evaluation stops at its rows).
  g = grid(0.003, 3);
  g[2].run = testing::tiny_run_config("sinusoidal", 4, 4, 32);
  g[2].run.train.steps = 2;
  EXPECT_NO_THROW(validate_grid(g));
  g[2].eval.max_len = limits::eval_len.max;
  g[2].eval.samples = limits::samples.max;
  try {
    validate_grid(g);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("grid run 2 (run 2): eval config:"), std::string::npos)
        << e.what();
  }
}

// The demo's runs one by one within the limit, together past it (18 runs of 100 million steps).
TEST(Preflight, TheDemosRunsTogetherAreBoundedBeforeAnyRuns) {
  DemoOptions o;
  EXPECT_NO_THROW(check_demo(plan_demo(o)));  // the demo's preset
  o.quick = true;
  EXPECT_NO_THROW(check_demo(plan_demo(o)));
  o.steps = o.randomized_steps = limits::steps.max;
  try {
    check_demo(plan_demo(o));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields().front(), "demo.steps");
    EXPECT_NE(std::string(e.what()).find("training runs need about"), std::string::npos)
        << e.what();
  }
}

TEST(Preflight, RanksGivenAnotherGridAllFailBeforeTraining) {
  for (const auto& [lr1, runs1] :
       {std::pair{0.5, std::size_t{2}}, std::pair{0.003, std::size_t{3}}}) {
    ThreadGroup group(2);
    const auto errors = group.run([&](Communicator& comm) {
      const auto runs = comm.rank() == 0 ? grid(0.003, 2) : grid(lr1, runs1);
      (void)run_grid(runs, {}, comm);
    });
    for (const auto& e : errors) {
      ASSERT_TRUE(e);
      EXPECT_NE(
          message(e).find("sweep: the ranks were not given the same settings: rank(s) 1 of 2"),
          std::string::npos)
          << message(e);
    }
  }
  EXPECT_NE(grid_settings(grid(0.003, 2)), grid_settings(grid(0.5, 2)));
  EXPECT_EQ(grid_settings(grid(0.003, 2)), grid_settings(grid(0.003, 2)));
}

// Rank 1 in a status exchange while rank 0 sends a settings hash (another command): rank 1 must
// not allocate the hash's value as a message length.
TEST(Preflight, AStatusFromAPeerInAnotherCollectiveIsBounded) {
  ThreadGroup group(2);
  const auto errors = group.run([&](Communicator& comm) {
    if (comm.rank() == 0) {
      (void)comm.allgather(std::uint64_t{0xfedcba9876543210});
    } else {
      comm.check(nullptr, "train: loading");
    }
  });
  ASSERT_TRUE(errors[1]);
  EXPECT_NE(message(errors[1]).find("train: loading: rank 0 of 2 answered out of step"),
            std::string::npos)
      << message(errors[1]);
}

TEST(Preflight, SizesFromPeersAreBoundedBeforeAllocating) {
  ThreadGroup group(2);
  const auto errors = group.run([&](Communicator& comm) {
    const auto sizes = gather_sizes(comm, comm.rank() == 0 ? 10 : (std::uint64_t{1} << 60), 1000,
                                    "sweep: results");
    (void)sizes;
  });
  for (const auto& e : errors) {
    ASSERT_TRUE(e);
    EXPECT_NE(message(e).find("sweep: results: rank 1 of 2 announced"), std::string::npos)
        << message(e);
  }
}

}  // namespace
}  // namespace posemb::lab
