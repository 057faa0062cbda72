// The lab's tasks (lab/tasks/): the registry (names unique and found, an unknown one refused
// with the choices, every entry complete), every task's batches in the documented layout, each
// answer following its task's rule (checked here by a property of the rule, not by the generator's
// own function), the length rule the batches use, and the same seed giving every task the same
// symbols.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/tasks/task.hpp"
#include "lab/train/run.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {
namespace {

// The symbol tasks (lab/tasks/symbols.hpp): the ones scored by greedy decoding. The text task
// has its own tests (test_lab_text.cpp).
std::vector<std::string> symbol_task_names() {
  std::vector<std::string> out;
  for (const auto* t : tasks()) {
    if (t->scoring == Scoring::greedy) out.emplace_back(t->name);
  }
  return out;
}

using symbols::kBos;
using symbols::kEos;
using symbols::kFirstSymbol;
using symbols::kPad;
using symbols::kSep;

// The rule of each task, checked as a property of (x, y): y's symbol at i is x's at the index
// the task reads, or, for sort, y is x's multiset in ascending order.
void expect_rule(const std::string& task, const std::vector<TokenId>& x,
                 const std::vector<TokenId>& y) {
  const std::size_t n = x.size();
  ASSERT_EQ(y.size(), n) << task;
  if (task == "sort") {
    EXPECT_TRUE(std::is_sorted(y.begin(), y.end()));
    EXPECT_EQ(std::multiset<TokenId>(x.begin(), x.end()),
              std::multiset<TokenId>(y.begin(), y.end()));
    return;
  }
  ASSERT_TRUE(task == "copy" || task == "reverse" || task == "odd-first")
      << "a task this test has no rule for: " << task;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t from = i;  // copy
    if (task == "reverse") from = n - 1 - i;
    if (task == "odd-first") {
      const std::size_t odd = (n + 1) / 2;  // x1, x3, ... (1-based) come first
      from = i < odd ? 2 * i : 2 * (i - odd) + 1;
    }
    EXPECT_EQ(y[i], x[from]) << task << " n " << n << " i " << i;
  }
}

// One row of a batch: BOS x SEP y (then PAD), targets y EOS on the answer rows and -1 elsewhere;
// its tokens the length rule's. Returns n.
std::size_t expect_row(const Batch& batch, std::size_t b, const TaskConfig& task) {
  const std::size_t T = batch.tokens.cols(), len = batch.row_tokens[b];
  EXPECT_GE(len, 4u);
  EXPECT_EQ(len % 2, 0u);
  const std::size_t n = (len - 2) / 2;
  EXPECT_EQ(symbols::tokens(n), len);
  EXPECT_LE(len, T);
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
    EXPECT_EQ(batch.targets(b, t), want) << task.kind << " row " << b << " t " << t;
  }
  return n;
}

TEST(Tasks, RegistryNamesAreUniqueFoundAndAnUnknownNameListsTheChoices) {
  const auto names = task_name_list();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"copy", "reverse", "sort", "odd-first", "text"}));
  EXPECT_EQ(names.size(), tasks().size());
  EXPECT_EQ(default_task_name(), names.front());
  for (const auto* t : tasks()) EXPECT_EQ(&find_task(t->name), t);
  try {
    (void)find_task("shuffle");
    FAIL() << "an unknown task was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("shuffle"), std::string::npos) << what;
    for (const auto& name : names) EXPECT_NE(what.find(name), std::string::npos) << what;
    EXPECT_EQ(e.fields(), std::vector<std::string>{"task.kind"});
  }
  for (const auto& name : names) EXPECT_NE(task_rules().find(name), std::string::npos);
  TaskConfig unknown;  // no task chosen
  EXPECT_THROW((void)validate_task(unknown), ConfigError);
}

// Every entry is complete: a rule, a length rule that grows, both batches, a vocabulary, presets
// the demo can run (lengths and steps within the lab's limits).
TEST(Tasks, EveryEntryIsComplete) {
  for (const auto* t : tasks()) {
    SCOPED_TRACE(std::string(t->name));
    EXPECT_FALSE(t->rule.empty());
    EXPECT_FALSE(t->length_rule.empty());
    ASSERT_NE(t->tokens, nullptr);
    ASSERT_NE(t->vocab_size, nullptr);
    ASSERT_NE(t->train_batch, nullptr);
    ASSERT_NE(t->eval_batch, nullptr);
    for (std::size_t n = 1; n < 200; ++n) EXPECT_LT(t->tokens(n), t->tokens(n + 1));
    TaskConfig cfg;
    cfg.kind = std::string(t->name);
    EXPECT_GE(t->vocab_size(cfg), 2u);
    for (const DemoPreset& p : {t->demo, t->quick}) {
      EXPECT_TRUE(limits::train_len.contains(p.train_len));
      EXPECT_TRUE(limits::eval_len.contains(p.eval_max));
      EXPECT_GT(p.eval_max, p.train_len);
      for (const std::size_t steps :
           {p.steps, p.randomized_steps, p.extension_steps, p.rope_extension_steps}) {
        EXPECT_TRUE(limits::steps.contains(steps));
      }
      EXPECT_GE(p.randomized_rows, t->tokens(p.train_len));
      EXPECT_GE(p.samples, 1u);
    }
  }
}

TEST(Tasks, LongestLengthWithinIsTheLengthRulesInverse) {
  const TaskSpec& copy = find_task("copy");
  EXPECT_EQ(longest_length_within(copy, 0), 0u);
  EXPECT_EQ(longest_length_within(copy, 3), 0u);
  EXPECT_EQ(longest_length_within(copy, 4), 1u);
  EXPECT_EQ(longest_length_within(copy, 9), 3u);
  EXPECT_EQ(longest_length_within(copy, 10), 4u);
  for (std::size_t tokens = 4; tokens < 3000; tokens += 7) {
    const std::size_t n = longest_length_within(copy, tokens);
    EXPECT_LE(copy.tokens(n), tokens);
    EXPECT_GT(copy.tokens(n + 1), tokens);
  }
}

TEST(Tasks, EveryTaskRoundTripsThroughTheRunJson) {
  for (const auto& name : task_name_list()) {
    RunConfig r;
    r.task.kind = name;
    r.task.train_len = 5;
    r.model.pe = "learned";
    r.model.vocab_size = task_vocab_size(r.task);
    r.model.max_seq_len = train_tokens(r.task);
    ASSERT_NO_THROW(validate_run(r)) << name;
    EXPECT_EQ(RunConfig::from_json(r.to_json()).task.kind, name);
  }
}

TEST(Tasks, TrainAndEvalBatchesFollowEachTasksRule) {
  ASSERT_EQ(symbol_task_names().size(), 4u);
  for (const auto& name : symbol_task_names()) {
    TaskConfig task;
    task.kind = name;
    task.alphabet = 5;
    task.train_len = 9;
    const TaskSpec& spec = find_task(name);
    Batch batch;
    spec.train_batch(batch, task, 64, 7, 3, PositionMode::contiguous, 0);
    ASSERT_EQ(batch.tokens.cols(), spec.tokens(task.train_len));
    ASSERT_EQ(batch.tokens.cols(), train_tokens(task));
    std::size_t answers = 0;
    for (std::size_t b = 0; b < 64; ++b) {
      answers += expect_row(batch, b, task) + 1;
      for (std::size_t t = 0; t < batch.tokens.cols(); ++t) {
        const std::size_t last = batch.row_tokens[b] - 1;
        EXPECT_EQ(batch.positions(b, t), static_cast<std::int64_t>(std::min(t, last)));
      }
    }
    EXPECT_EQ(batch.counted, answers);
    for (const std::size_t n : {1u, 2u, 7u, 8u, 13u}) {
      spec.eval_batch(batch, task, n, 16, 11, PositionMode::contiguous, 0);
      ASSERT_EQ(batch.tokens.cols(), spec.tokens(n));
      for (std::size_t b = 0; b < 16; ++b) EXPECT_EQ(expect_row(batch, b, task), n);
      EXPECT_EQ(batch.counted, 16 * (n + 1));
    }
    // Randomized positions need as many distinct rows as the longest row has tokens.
    EXPECT_THROW(spec.eval_batch(batch, task, 8, 2, 1, PositionMode::randomized, 17),
                 SequenceTooLong);
  }
}

// The symbols depend on the seed and step alone: two tasks see the same inputs, and differ only in
// their answers (so a comparison of tasks is not one of data).
TEST(Tasks, TheSameSeedGivesEveryTaskTheSameSymbols) {
  std::vector<std::vector<TokenId>> inputs;
  for (const auto& name : symbol_task_names()) {
    TaskConfig task;
    task.kind = name;
    task.train_len = 12;
    Batch batch;
    find_task(name).train_batch(batch, task, 8, 5, 2, PositionMode::randomized, 64);
    std::vector<TokenId> x;
    for (std::size_t b = 0; b < 8; ++b) {
      const std::size_t n = (batch.row_tokens[b] - 2) / 2;
      for (std::size_t i = 0; i <= n; ++i) x.push_back(batch.tokens(b, i));
      const auto pos = batch.positions.row(b);
      EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()));
    }
    inputs.push_back(x);
  }
  for (std::size_t k = 1; k < inputs.size(); ++k) EXPECT_EQ(inputs[k], inputs[0]);
}

}  // namespace
}  // namespace posemb::lab
