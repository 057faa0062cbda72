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

#include "lab/config.hpp"

namespace posemb::lab {

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
};

// A number a scorer reports for a length: its column name in results files and its value.
struct ScoreColumn {
  std::string_view name;
  double (*value)(const LengthResult& l);
};
// greedy: exact_match, token_accuracy; teacher_forced: loss, bits_per_token (loss / ln 2).
std::span<const ScoreColumn> score_columns(Scoring s);

}  // namespace posemb::lab
