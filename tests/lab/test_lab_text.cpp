// The text task (lab/tasks/text.hpp): training rows are windows of the training part with the
// next bytes as targets; evaluation windows predict every validation byte once (Press et al.'s
// non-overlapping windows and the sliding ones), checked against a plain enumeration; the
// corpus named in the settings, checked when read again, refused for the other tasks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/corpus.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/text.hpp"
#include "lab/train/run.hpp"
#include "posemb/errors.hpp"
#include "posemb/random.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

using test::TempDir;

std::string random_text(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng.next());
  return s;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TextTask, TrainingRowsAreWindowsOfTheTrainingPartWithTheNextBytes) {
  const std::string bytes = random_text(5000, 1);  // split 4500
  const auto corpus = Corpus::from_bytes("t", bytes);
  Batch b;
  const std::size_t T = 33, B = 40;
  text::fill_train_batch(b, *corpus, B, T, 9, 4, PositionMode::contiguous, 0);
  ASSERT_EQ(b.tokens.rows(), B);
  ASSERT_EQ(b.tokens.cols(), T);
  EXPECT_EQ(b.counted, B * T);
  for (std::size_t r = 0; r < B; ++r) {
    const std::size_t o = corpus->train_window(9, 4, r, T);
    ASSERT_LE(o + T + 1, corpus->split());
    EXPECT_EQ(b.row_tokens[r], T);
    for (std::size_t t = 0; t < T; ++t) {
      EXPECT_EQ(b.tokens(r, t), static_cast<unsigned char>(bytes[o + t]));
      EXPECT_EQ(b.targets(r, t), static_cast<unsigned char>(bytes[o + t + 1]));
      EXPECT_EQ(b.positions(r, t), static_cast<std::int64_t>(t));
    }
  }
  // A function of (seed, step) alone: the same again, another step differs.
  Batch again, other;
  text::fill_train_batch(again, *corpus, B, T, 9, 4, PositionMode::contiguous, 0);
  text::fill_train_batch(other, *corpus, B, T, 9, 5, PositionMode::contiguous, 0);
  EXPECT_TRUE(std::equal(b.tokens.data(), b.tokens.data() + B * T, again.tokens.data()));
  EXPECT_FALSE(std::equal(b.tokens.data(), b.tokens.data() + B * T, other.tokens.data()));
  // Randomized positions: sorted, distinct, inside the range.
  text::fill_train_batch(b, *corpus, B, T, 9, 4, PositionMode::randomized, 100);
  for (std::size_t r = 0; r < B; ++r) {
    const auto pos = b.positions.row(r);
    EXPECT_TRUE(std::adjacent_find(pos.begin(), pos.end(), [](auto x, auto y) { return x >= y; }) ==
                pos.end());
    EXPECT_GE(pos.front(), 0);
    EXPECT_LT(pos.back(), 100);
  }
  EXPECT_THROW(text::fill_train_batch(b, *corpus, B, T, 9, 4, PositionMode::randomized, 32),
               SequenceTooLong);
  EXPECT_THROW(text::fill_train_batch(b, *corpus, 2, 4500, 9, 4, PositionMode::contiguous, 0),
               ConfigError);
}

// Every predictable validation byte v[1..] up to the last whole window is predicted exactly once,
// with the context the rule gives, for strides from 1 to T and awkward sizes: checked by
// enumerating the rows' counted targets.
TEST(TextTask, EvaluationWindowsPredictEveryValidationByteOnce) {
  for (const std::size_t total : {20, 101, 1000, 2345}) {
    const std::string bytes = random_text(total, total);
    const auto corpus = Corpus::from_bytes("t", bytes);
    const std::size_t V = corpus->validation().size(), split = corpus->split();
    for (const std::size_t T : {1, 2, 7, 16, 50, 64, 300}) {
      for (const std::size_t S : {std::size_t{1}, T / 2, T - 1, T}) {
        if (S == 0 || S > T) continue;
        const WindowPlan p = text::plan_windows(V, T, S);
        SCOPED_TRACE(std::to_string(total) + " bytes, T " + std::to_string(T) + ", S " +
                     std::to_string(S));
        EXPECT_EQ(p.scored + p.dropped, V - 1);
        if (p.windows == 0) {
          EXPECT_LT(V - 1, T);
          continue;
        }
        EXPECT_LT(p.dropped, S);  // less than one more stride
        Batch b;
        text::fill_windows(b, *corpus, p, 0, p.windows, PositionMode::contiguous, 0, 1);
        std::vector<int> predicted(V, 0);  // how often each validation byte is a counted target
        std::size_t counted = 0;
        for (std::size_t k = 0; k < p.windows; ++k) {
          for (std::size_t t = 0; t < T; ++t) {
            const std::size_t at = k * S + t;  // the input's index in the validation text
            ASSERT_EQ(b.tokens(k, t), static_cast<unsigned char>(bytes[split + at]));
            EXPECT_EQ(b.positions(k, t), static_cast<std::int64_t>(t));
            if (b.targets(k, t) < 0) continue;
            EXPECT_EQ(b.targets(k, t), static_cast<unsigned char>(bytes[split + at + 1]));
            EXPECT_TRUE(k == 0 || t >= T - S) << "a target counted twice";
            ++predicted[at + 1];
            ++counted;
          }
        }
        EXPECT_EQ(counted, p.scored);
        EXPECT_EQ(b.counted, p.scored);
        EXPECT_EQ(predicted[0], 0);
        for (std::size_t i = 1; i < V; ++i) {
          EXPECT_EQ(predicted[i], i <= p.scored ? 1 : 0) << "byte " << i;
        }
      }
    }
  }
  EXPECT_THROW((void)text::plan_windows(100, 8, 9), std::invalid_argument);
  EXPECT_THROW((void)text::plan_windows(100, 8, 0), std::invalid_argument);
}

// Rows of a plan fetched in pieces are the rows of the whole.
TEST(TextTask, WindowsInPiecesAreTheWholesRows) {
  const auto corpus = Corpus::from_bytes("t", random_text(3000, 2));
  const auto p = text::plan_windows(corpus->validation().size(), 20, 20);
  Batch whole, part;
  text::fill_windows(whole, *corpus, p, 0, p.windows, PositionMode::randomized, 64, 3);
  for (std::size_t first = 0; first < p.windows; first += 4) {
    const std::size_t n = std::min<std::size_t>(4, p.windows - first);
    text::fill_windows(part, *corpus, p, first, n, PositionMode::randomized, 64, 3);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t t = 0; t < 20; ++t) {
        EXPECT_EQ(part.tokens(i, t), whole.tokens(first + i, t));
        EXPECT_EQ(part.targets(i, t), whole.targets(first + i, t));
        EXPECT_EQ(part.positions(i, t), whole.positions(first + i, t));
      }
    }
  }
  EXPECT_THROW(text::fill_windows(part, *corpus, p, p.windows, 1, PositionMode::contiguous, 0, 3),
               std::invalid_argument);
}

// The settings name the corpus when the run is made, and it is checked whenever it is read again.
TEST(TextTask, TheRunRecordsItsCorpusAndAnotherCorpusIsRefused) {
  TempDir dir;
  const std::string a = write(dir, "a.txt", random_text(4000, 5));
  const std::string b = write(dir, "b.txt", random_text(4000, 6));
  RunChoices c;
  c.task = "text";
  c.pe = "sinusoidal";
  c.run.task.corpus = a;
  c.run.task.train_len = 32;
  const RunConfig run = complete_run(c);
  EXPECT_EQ(run.model.vocab_size, 256u);
  EXPECT_EQ(run.task.corpus_identity, corpus_of(run.task)->identity());
  EXPECT_EQ(run.task.corpus_identity.name, "a.txt");
  EXPECT_EQ(run.task.corpus_identity.bytes, 4000u);
  // Through the run JSON (a checkpoint's settings) and back.
  const RunConfig back = run_from_json(run.to_json());
  EXPECT_EQ(back.task.corpus, a);
  EXPECT_EQ(back.task.corpus_identity, run.task.corpus_identity);
  // The same settings pointed at another file: refused, both named.
  TaskConfig moved = run.task;
  moved.corpus = b;
  try {
    validate_task(moved);
    FAIL() << "another corpus was taken for the recorded one";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"task.corpus"});
    const std::string what = e.what();
    EXPECT_NE(what.find("'b.txt'"), std::string::npos) << what;
    EXPECT_NE(what.find("'a.txt'"), std::string::npos) << what;
  }
  // The same text under another name (a renamed or moved copy) is the run's corpus.
  TaskConfig renamed = run.task;
  renamed.corpus = write(dir, "copy of a.txt", random_text(4000, 5));
  EXPECT_NO_THROW(validate_task(renamed));
  // A run from the checkpoint on another corpus names it anew.
  RunOverrides ov;
  ov.values.task.corpus = b;
  ov.fields.push_back("task.corpus");
  const RunConfig next = merge_run(run, ov);
  EXPECT_EQ(next.task.corpus_identity.name, "b.txt");
  // Too small for the training length: refused with the numbers.
  c.run.task.train_len = 3600;  // the training part is 3600 bytes
  EXPECT_THROW((void)complete_run(c), ConfigError);
  // A symbol task takes no corpus.
  RunChoices s;
  s.run.task.corpus = a;
  try {
    (void)complete_run(s);
    FAIL() << "a symbol task took a corpus";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"task.corpus"});
  }
  // A symbol task's settings write no corpus (its checkpoints read as before).
  EXPECT_EQ(complete_run(RunChoices()).to_json().find("corpus"), std::string::npos);
}

TEST(TextTask, ACorruptCorpusRecordIsRefused) {
  TempDir dir;
  RunChoices c;
  c.task = "text";
  c.pe = "sinusoidal";
  c.run.task.corpus = write(dir, "a.txt", random_text(4000, 5));
  c.run.task.train_len = 16;
  const std::string json = complete_run(c).to_json();
  const std::string digest = corpus_of(complete_run(c).task)->identity().sha256;
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{digest, "xyz"},
                                                        {digest, digest.substr(0, 63) + "G"},
                                                        {"\"bytes\":4000", "\"bytes\":0"},
                                                        {"\"bytes\":4000", "\"bytes\":-1"},
                                                        {"\"name\":\"a.txt\"", "\"name\":7"},
                                                        {"\"sha256\"", "\"sha512\""}}) {
    std::string bad = json;
    ASSERT_NE(bad.find(from), std::string::npos) << from;
    bad.replace(bad.find(from), from.size(), to);
    EXPECT_THROW((void)RunConfig::from_json(bad), ConfigError) << bad;
  }
}

}  // namespace
}  // namespace posemb::lab
