// The scorers' columns (lab/eval/length_result.hpp).
#include "lab/eval/length_result.hpp"

#include <cmath>
#include <numbers>

namespace posemb::lab {
namespace {

constexpr ScoreColumn kGreedy[] = {
    {"exact_match", [](const LengthResult& l) { return l.exact_match; }},
    {"token_accuracy", [](const LengthResult& l) { return l.token_accuracy; }},
};
constexpr ScoreColumn kTeacherForced[] = {
    {"loss", [](const LengthResult& l) { return l.loss; }},
    {"bits_per_token", [](const LengthResult& l) { return l.loss / std::numbers::ln2; }},
};

constexpr ScoreColumn kWindows[] = {
    {"scored", [](const LengthResult& l) { return static_cast<double>(l.counted); }, true},
    {"dropped", [](const LengthResult& l) { return static_cast<double>(l.dropped); }, true},
    {"sliding_stride", [](const LengthResult& l) { return static_cast<double>(l.sliding.stride); },
     true},
    {"sliding_bits_per_token",
     [](const LengthResult& l) { return l.sliding.loss / std::numbers::ln2; }},
};

}  // namespace

double LossBucket::bits_per_token() const {
  return count == 0 ? 0.0 : nll / std::numbers::ln2 / static_cast<double>(count);
}

std::span<const ScoreColumn> window_columns() {
  return kWindows;
}

bool scored_on_windows(const LengthResult& l) {
  return l.sliding.stride != 0;
}

std::span<const ScoreColumn> score_columns(Scoring s) {
  return s == Scoring::teacher_forced ? std::span<const ScoreColumn>(kTeacherForced)
                                      : std::span<const ScoreColumn>(kGreedy);
}

}  // namespace posemb::lab
