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

}  // namespace

std::span<const ScoreColumn> score_columns(Scoring s) {
  return s == Scoring::teacher_forced ? std::span<const ScoreColumn>(kTeacherForced)
                                      : std::span<const ScoreColumn>(kGreedy);
}

}  // namespace posemb::lab
