// The symbol tasks' layout and batches (lab/tasks/symbols.hpp).
#include "lab/tasks/symbols.hpp"

#include <string>

#include "lab/tasks/batch_rows.hpp"
#include "posemb/errors.hpp"
#include "posemb/random.hpp"

namespace posemb::lab::symbols {
namespace {

void fill_row(Batch& out, std::size_t b, const TaskConfig& cfg, std::size_t n, Rng& rng,
              PositionMode mode, std::size_t range, Answer answer) {
  const std::size_t T = out.tokens.cols();
  std::vector<TokenId> x(n);
  for (auto& v : x) v = kFirstSymbol + static_cast<TokenId>(rng.below(cfg.alphabet));
  const auto y = answer(x);
  std::vector<TokenId> seq;
  seq.push_back(kBos);
  seq.insert(seq.end(), x.begin(), x.end());
  seq.push_back(kSep);
  seq.insert(seq.end(), y.begin(), y.end());
  seq.push_back(kEos);
  const std::size_t len = tokens(n);  // seq.size() - 1
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
  out.row_tokens[b] = len;
  out.counted += n + 1;
}

}  // namespace

std::size_t vocab_size(const TaskConfig& cfg) {
  return cfg.alphabet + 4;
}

std::size_t tokens(std::size_t n) {
  return 2 * n + 2;
}

void fill_train_batch(Batch& out, const TaskConfig& cfg, std::size_t rows, std::uint64_t seed,
                      std::uint64_t step, PositionMode mode, std::size_t range, Answer answer) {
  cfg.check_fields();
  const std::size_t T = tokens(cfg.train_len);
  check_position_range("train_batch", T, mode, range);
  shape_batch(out, rows, T);
  Rng rng(mix_seed(seed, step));
  for (std::size_t b = 0; b < rows; ++b) {
    const std::size_t n = 1 + rng.below(cfg.train_len);
    fill_row(out, b, cfg, n, rng, mode, range, answer);
  }
}

void fill_eval_batch(Batch& out, const TaskConfig& cfg, std::size_t n, std::size_t rows,
                     std::uint64_t seed, PositionMode mode, std::size_t range, Answer answer) {
  cfg.check_fields();
  check_position_range("eval_batch", tokens(n), mode, range);
  shape_batch(out, rows, tokens(n));
  Rng rng(mix_seed(seed ^ 0xe7a1ull, n));
  for (std::size_t b = 0; b < rows; ++b) fill_row(out, b, cfg, n, rng, mode, range, answer);
}

}  // namespace posemb::lab::symbols
