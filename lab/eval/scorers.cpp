// The scorers by Scoring (lab/eval/scorers.hpp).
#include "lab/eval/scorers.hpp"

namespace posemb::lab {
namespace {

constexpr Scorer kScorers[] = {
    {greedy_bytes, score_greedy},                  // Scoring::greedy
    {teacher_forced_bytes, score_teacher_forced},  // Scoring::teacher_forced
};

}  // namespace

const Scorer& scorer_for(Scoring s) {
  return kScorers[static_cast<std::size_t>(s)];
}

}  // namespace posemb::lab
