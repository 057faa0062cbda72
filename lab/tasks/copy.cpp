// copy: y = x (lab/tasks/symbols.hpp has the layout). Every answer token is the input token at the
// same offset from its separator: a task of positions.
#include "lab/tasks/symbols.hpp"
#include "lab/tasks/task.hpp"

namespace posemb::lab {
namespace {

std::vector<TokenId> answer(const std::vector<TokenId>& x) {
  return x;
}

}  // namespace

// Over 8 symbols, n <= 8: a 2-layer, 4-head, d_model 32 GPT learns it in 2000 AdamW steps of 32
// sequences; the encoding trained on randomized positions with a 40-row table (5 L) in 2500; the
// extension fine-tunes 1000 steps at n <= 16; a rotary run 500 steps with each RoPE scaling at
// n <= 16, probed every 100.
extern const TaskSpec kCopy{
    .name = "copy",
    .rule = "y = x",
    .length_rule = symbols::kLengthRule,
    .vocab_size = symbols::vocab_size,
    .tokens = symbols::tokens,
    .train_batch = symbols::train_batch<answer>,
    .eval_batch = symbols::eval_batch<answer>,
    .scoring = Scoring::greedy,
    .demo = {8, 2000, 2500, 40, 1000, 500, 100, 24, 100},
    .quick = symbols::kQuick,
    .validate = nullptr,
};

}  // namespace posemb::lab
