// lab/eval/length_result.hpp: one evaluated length, as either scorer measures it, and the
// columns each scorer reports (the one list the results files of lab/report/ write).
//
//   for (const lab::ScoreColumn& c : lab::score_columns(l.scoring))
//     std::cout << c.name << " " << c.value(l);    // exact_match 0.97, token_accuracy 0.99
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"

namespace posemb::lab {

// The loss of the targets predicted at positions [begin, end) of the rows (teacher-forced).
struct LossBucket {
  std::size_t begin = 0, end = 0;
  double nll = 0.0;               // summed negative log-likelihood (nats)
  std::size_t count = 0;          // targets
  double bits_per_token() const;  // nll / ln 2 / count (0 without targets)
};

// A task evaluated on the windows of a text: its sliding-window figure (lab/tasks/task.hpp's
// WindowPlan with stride < T), beside the non-overlapping windows' loss.
struct SlidingScore {
  std::size_t stride = 0;  // 0: not evaluated
  double loss = 0.0;       // mean negative log-likelihood (nats) of the counted targets
  std::size_t counted = 0, dropped = 0;
};

struct LengthResult {
  std::size_t length = 0;     // the task's length n
  bool beyond_table = false;  // a position past the learned table: not scored
  std::string detail;         // the SequenceTooLong message for beyond_table
  std::size_t samples = 0;    // rows scored
  Scoring scoring = Scoring::greedy;
  // greedy: the fraction of rows with every counted target decoded right, and of the counted
  // targets decoded right.
  double exact_match = 0.0, token_accuracy = 0.0;
  // teacher_forced: the counted targets' mean negative log-likelihood (nats) and their count.
  double loss = 0.0;
  std::size_t counted = 0;
  // A task evaluated on the windows of a text (Press et al.'s non-overlapping windows): the
  // predictable targets after the last whole window, not scored; the loss by position inside
  // the windows, in buckets of the training length ([0, L), [L, 2L), ...); the sliding windows.
  std::size_t dropped = 0;
  std::vector<LossBucket> buckets;
  SlidingScore sliding;
};

// A number a scorer reports for a length: its column name in results files and its value.
struct ScoreColumn {
  std::string_view name;
  double (*value)(const LengthResult& l);
  bool whole = false;  // a count, written as a whole number
};
// greedy: exact_match, token_accuracy; teacher_forced: loss, bits_per_token (loss / ln 2). The
// windows of a text add their own columns (window_columns).
std::span<const ScoreColumn> score_columns(Scoring s);
// A task evaluated on the windows of a text: scored (the counted targets), dropped, and the
// sliding windows' stride and bits_per_token (sliding_stride, sliding_bits_per_token). Whole
// numbers but the last.
std::span<const ScoreColumn> window_columns();
// Whether a length was scored on the windows of a text (its sliding figure or its buckets).
bool scored_on_windows(const LengthResult& l);

}  // namespace posemb::lab
