// The lab's tasks (lab/task.hpp): every task's batches have the documented layout, each answer
// follows its task's rule (checked here by a property of the rule, not by the generator's own
// function), the names parse back, and the same seed gives the same symbols for every task.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab {
namespace {

std::vector<TaskKind> every_task() {
  std::vector<TaskKind> kinds;
  for (const auto& name : task_kind_names()) kinds.push_back(parse_task_kind(name));
  return kinds;
}

// The rule of each task, checked as a property of (x, y): y's symbol at i is x's at the index
// the task reads, or, for sort, y is x's multiset in ascending order.
void expect_rule(TaskKind kind, const std::vector<TokenId>& x, const std::vector<TokenId>& y) {
  const std::size_t n = x.size();
  ASSERT_EQ(y.size(), n) << task_kind_name(kind);
  if (kind == TaskKind::sort) {
    EXPECT_TRUE(std::is_sorted(y.begin(), y.end()));
    EXPECT_EQ(std::multiset<TokenId>(x.begin(), x.end()),
              std::multiset<TokenId>(y.begin(), y.end()));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t from = i;  // copy
    if (kind == TaskKind::reverse) from = n - 1 - i;
    if (kind == TaskKind::odd_first) {
      const std::size_t odd = (n + 1) / 2;  // x1, x3, ... (1-based) come first
      from = i < odd ? 2 * i : 2 * (i - odd) + 1;
    }
    EXPECT_EQ(y[i], x[from]) << task_kind_name(kind) << " n " << n << " i " << i;
  }
}

// One row of a batch: BOS x SEP y (then PAD), targets y EOS on the answer rows and -1 elsewhere.
void expect_row(const Batch& batch, std::size_t b, const TaskConfig& task) {
  const std::size_t n = batch.lengths[b], T = batch.tokens.cols(), len = input_len(n);
  ASSERT_GE(n, 1u);
  ASSERT_LE(len, T);
  EXPECT_EQ(batch.tokens(b, 0), kBos);
  EXPECT_EQ(batch.tokens(b, n + 1), kSep);
  std::vector<TokenId> x, y;
  for (std::size_t i = 0; i < n; ++i) {
    const TokenId s = batch.tokens(b, 1 + i);
    EXPECT_GE(s, kFirstSymbol);
    EXPECT_LT(s, kFirstSymbol + static_cast<TokenId>(task.alphabet));
    x.push_back(s);
    y.push_back(batch.tokens(b, n + 2 + i));
  }
  expect_rule(task.kind, x, y);
  for (std::size_t t = 0; t < T; ++t) {
    if (t >= len) {
      EXPECT_EQ(batch.tokens(b, t), kPad) << t;
    }
    const bool answer = t >= n + 1 && t < len;
    const std::int32_t want =
        !answer ? -1 : (t + 1 < len ? static_cast<std::int32_t>(batch.tokens(b, t + 1)) : kEos);
    EXPECT_EQ(batch.targets(b, t), want) << task_kind_name(task.kind) << " row " << b << " t " << t;
  }
}

TEST(Tasks, NamesParseBackAndAnUnknownNameListsTheChoices) {
  const auto names = task_kind_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_GE(names.size(), 4u);
  for (const auto& name : names) EXPECT_EQ(task_kind_name(parse_task_kind(name)), name);
  try {
    (void)parse_task_kind("shuffle");
    FAIL() << "an unknown task was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("shuffle"), std::string::npos) << what;
    for (const auto& name : names) EXPECT_NE(what.find(name), std::string::npos) << what;
  }
  for (const auto& name : names) EXPECT_NE(task_kind_rules().find(name), std::string::npos);
}

TEST(Tasks, EveryTaskRoundTripsThroughTheRunJson) {
  for (const TaskKind kind : every_task()) {
    RunConfig r;
    r.task.kind = kind;
    r.task.train_len = 5;
    r.model.vocab_size = r.task.vocab_size();
    r.model.max_seq_len = input_len(r.task.train_len);
    EXPECT_EQ(RunConfig::from_json(r.to_json()).task.kind, kind) << task_kind_name(kind);
  }
}

TEST(Tasks, TrainAndEvalBatchesFollowEachTasksRule) {
  for (const TaskKind kind : every_task()) {
    TaskConfig task;
    task.kind = kind;
    task.alphabet = 5;
    task.train_len = 9;
    Batch batch;
    make_train_batch(batch, task, 64, 7, 3, PositionMode::contiguous, 0);
    ASSERT_EQ(batch.tokens.cols(), input_len(task.train_len));
    std::size_t answers = 0;
    for (std::size_t b = 0; b < 64; ++b) {
      expect_row(batch, b, task);
      answers += batch.lengths[b] + 1;
      for (std::size_t t = 0; t < batch.tokens.cols(); ++t) {
        const std::size_t last = input_len(batch.lengths[b]) - 1;
        EXPECT_EQ(batch.positions(b, t), static_cast<std::int64_t>(std::min(t, last)));
      }
    }
    EXPECT_EQ(batch.answer_tokens, answers);
    for (const std::size_t n : {1u, 2u, 7u, 8u, 13u}) {
      make_eval_batch(batch, task, n, 16, 11, PositionMode::contiguous, 0);
      for (std::size_t b = 0; b < 16; ++b) {
        ASSERT_EQ(batch.lengths[b], n);
        expect_row(batch, b, task);
      }
    }
  }
}

// The symbols depend on the seed and step alone: two tasks see the same inputs, and differ only in
// their answers (so a comparison of tasks is not one of data).
TEST(Tasks, TheSameSeedGivesEveryTaskTheSameSymbols) {
  std::vector<std::vector<TokenId>> inputs;
  for (const TaskKind kind : every_task()) {
    TaskConfig task;
    task.kind = kind;
    task.train_len = 12;
    Batch batch;
    make_train_batch(batch, task, 8, 5, 2, PositionMode::randomized, 64);
    std::vector<TokenId> x;
    for (std::size_t b = 0; b < 8; ++b) {
      for (std::size_t i = 0; i <= batch.lengths[b]; ++i) x.push_back(batch.tokens(b, i));
      const auto pos = batch.positions.row(b);
      EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()));
    }
    inputs.push_back(x);
  }
  for (std::size_t k = 1; k < inputs.size(); ++k) EXPECT_EQ(inputs[k], inputs[0]);
}

}  // namespace
}  // namespace posemb::lab
