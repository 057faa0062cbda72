// The evaluation room (lab/eval/): each length scored by greedy decoding or teacher-forced loss,
// the task's own scoring when none is asked for. The teacher-forced loss is the model's forward
// loss on the same rows (summed by chunks of rows, so equal to the whole batch's up to the order
// of a double sum); both scorers see the same lengths beyond the table; the results are the same
// bits on 1 and 2 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lab/eval/evaluate.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"

namespace posemb::lab {
namespace {

// A learned-table model of copy trained 20 steps at n <= 3: its table holds n <= 3.
Trainer trained(const std::string& pe) {
  RunConfig r = testing::tiny_run_config(pe, 3, 4, 32);
  r.train.batch = 8;
  r.train.micro_batch = 4;
  r.train.steps = 20;
  r.train.warmup = 2;
  r.train.lr = 3e-3f;
  Trainer tr(r);
  while (tr.step() < r.train.steps) tr.train_step();
  return tr;
}

TEST(Evaluation, TheTasksScoringUnlessAnotherIsAskedFor) {
  Trainer tr = trained("rope");
  EvalConfig ec;
  ec.min_len = 1;
  ec.max_len = 4;
  ec.samples = 6;
  const auto greedy = evaluate(tr.model(), tr.config().task, ec);
  ASSERT_EQ(greedy.size(), 4u);
  EXPECT_EQ(find_task(tr.config().task.kind).scoring, Scoring::greedy);
  for (const auto& l : greedy) EXPECT_EQ(l.scoring, Scoring::greedy);
  ec.scoring = Scoring::teacher_forced;
  const auto tf = evaluate(tr.model(), tr.config().task, ec);
  for (const auto& l : tf) {
    EXPECT_EQ(l.scoring, Scoring::teacher_forced);
    EXPECT_GT(l.loss, 0.0) << l.length;
    EXPECT_EQ(l.counted, ec.samples * (l.length + 1)) << l.length;  // y1..yn EOS per row
  }
}

// The loss of each length is Model::forward's on the eval batch of that length (every input
// given, the counted targets' mean): chunks of rows add their parts in double, the whole batch its
// rows, so the two agree to a few double roundings of the loss.
TEST(Evaluation, TeacherForcedLossIsTheForwardsLossOnTheSameRows) {
  Trainer tr = trained("sinusoidal");
  const TaskConfig& task = tr.config().task;
  EvalConfig ec;
  ec.min_len = 1;
  ec.max_len = 6;
  ec.samples = 19;  // chunks of 8, 8 and 3 rows
  ec.scoring = Scoring::teacher_forced;
  const auto rows = evaluate(tr.model(), task, ec);
  for (const auto& l : rows) {
    Batch batch;
    find_task(task.kind).eval_batch(batch, task, l.length, ec.samples, ec.seed,
                                    PositionMode::contiguous, 0);
    Activations acts(tr.model().config(), ec.samples, batch.tokens.cols());
    const double want = tr.model().forward(acts, batch.tokens, batch.positions, batch.targets);
    EXPECT_NEAR(l.loss, want, 64 * std::numeric_limits<double>::epsilon() * want) << l.length;
    EXPECT_NEAR(score_columns(l.scoring)[1].value(l), want / std::log(2.0), 1e-12) << l.length;
  }
}

TEST(Evaluation, BothScorersStopAtTheTableAndGiveTheSameBitsOnAnyThreads) {
  Trainer tr = trained("learned");
  EvalConfig ec;
  ec.min_len = 1;
  ec.max_len = 6;
  ec.samples = 5;
  for (const Scoring s : {Scoring::greedy, Scoring::teacher_forced}) {
    ec.scoring = s;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = evaluate(tr.model(), tr.config().task, ec);
    omp_set_num_threads(2);
    const auto two = evaluate(tr.model(), tr.config().task, ec);
    omp_set_num_threads(saved);
    ASSERT_EQ(one.size(), 6u);
    for (std::size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i].beyond_table, one[i].length > 3) << scoring_name(s) << " " << i;
      for (const auto& c : score_columns(s)) {
        const double a = c.value(one[i]), b = c.value(two[i]);
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << scoring_name(s) << " " << c.name;
      }
    }
  }
}

TEST(Evaluation, ScoringNamesParseBack) {
  for (const auto& name : scoring_names()) EXPECT_EQ(scoring_name(parse_scoring(name)), name);
  EXPECT_THROW((void)parse_scoring("beam"), ConfigError);
}

}  // namespace
}  // namespace posemb::lab
