#include "lab/tasks/task.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "posemb/errors.hpp"
#include "posemb/random.hpp"

namespace posemb::lab {

std::vector<TokenId> task_answer(TaskKind kind, const std::vector<TokenId>& x) {
  switch (kind) {
    case TaskKind::copy:
      return x;
    case TaskKind::reverse:
      return {x.rbegin(), x.rend()};
    case TaskKind::sort: {
      std::vector<TokenId> y = x;
      std::sort(y.begin(), y.end());
      return y;
    }
    case TaskKind::odd_first: {
      // x1 x3 x5 ... (indices 0, 2, 4, ...), then x2 x4 ... (indices 1, 3, ...).
      std::vector<TokenId> y;
      y.reserve(x.size());
      for (std::size_t start : {std::size_t{0}, std::size_t{1}}) {
        for (std::size_t i = start; i < x.size(); i += 2) y.push_back(x[i]);
      }
      return y;
    }
  }
  throw std::invalid_argument("task_answer: task kind " + std::to_string(static_cast<int>(kind)) +
                              " is not a task");
}

namespace {

// Sorted sample of `len` distinct values from [0, range) (selection sampling, Knuth's
// algorithm S: each value is kept with probability needed / remaining).
void sorted_sample(std::int64_t* out, std::size_t len, std::size_t range, Rng& rng) {
  std::size_t needed = len;
  for (std::size_t i = 0; i < range && needed > 0; ++i) {
    if (rng.below(range - i) < needed) {
      *out++ = static_cast<std::int64_t>(i);
      --needed;
    }
  }
}

void fill_row(Batch& out, std::size_t b, const TaskConfig& task, std::size_t n, Rng& rng,
              PositionMode mode, std::size_t range) {
  const std::size_t T = out.tokens.cols();
  std::vector<TokenId> x(n);
  for (auto& v : x) v = kFirstSymbol + static_cast<TokenId>(rng.below(task.alphabet));
  const auto y = task_answer(task.kind, x);
  std::vector<TokenId> seq;
  seq.push_back(kBos);
  seq.insert(seq.end(), x.begin(), x.end());
  seq.push_back(kSep);
  seq.insert(seq.end(), y.begin(), y.end());
  seq.push_back(kEos);
  const std::size_t len = input_len(n);  // seq.size() - 1
  for (std::size_t t = 0; t < T; ++t) {
    out.tokens(b, t) = t < len ? seq[t] : kPad;
    out.targets(b, t) = (t >= n + 1 && t < len) ? seq[t + 1] : -1;
  }
  std::int64_t* pos = out.positions.row(b).data();
  if (mode == PositionMode::contiguous) {
    for (std::size_t t = 0; t < len; ++t) pos[t] = static_cast<std::int64_t>(t);
  } else {
    sorted_sample(pos, len, range, rng);
  }
  for (std::size_t t = len; t < T; ++t) pos[t] = pos[len - 1];
  out.lengths[b] = n;
  out.answer_tokens += n + 1;
}

void shape(Batch& out, std::size_t B, std::size_t T) {
  if (out.tokens.rows() != B || out.tokens.cols() != T) {
    out.tokens = Matrix<TokenId>(B, T);
    out.positions = Matrix<std::int64_t>(B, T);
    out.targets = Matrix<std::int32_t>(B, T);
  }
  out.lengths.assign(B, 0);
  out.answer_tokens = 0;
}

void check_range(const char* op, std::size_t len, PositionMode mode, std::size_t range) {
  if (mode == PositionMode::randomized && len > range) {
    throw SequenceTooLong(op, len, 0, range, "randomized positions need distinct table rows");
  }
}

}  // namespace

void make_train_batch(Batch& out, const TaskConfig& task, std::size_t batch, std::uint64_t seed,
                      std::uint64_t step, PositionMode mode, std::size_t range) {
  task.validate();
  const std::size_t T = input_len(task.train_len);
  check_range("make_train_batch", T, mode, range);
  shape(out, batch, T);
  Rng rng(mix_seed(seed, step));
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t n = 1 + rng.below(task.train_len);
    fill_row(out, b, task, n, rng, mode, range);
  }
}

void make_eval_batch(Batch& out, const TaskConfig& task, std::size_t n, std::size_t count,
                     std::uint64_t seed, PositionMode mode, std::size_t range) {
  task.validate();
  check_range("make_eval_batch", input_len(n), mode, range);
  shape(out, count, input_len(n));
  Rng rng(mix_seed(seed ^ 0xe7a1ull, n));
  for (std::size_t b = 0; b < count; ++b) fill_row(out, b, task, n, rng, mode, range);
}

}  // namespace posemb::lab
