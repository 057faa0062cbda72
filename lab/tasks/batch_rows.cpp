// What every task's batches share (lab/tasks/batch_rows.hpp).
#include "lab/tasks/batch_rows.hpp"

#include "posemb/errors.hpp"

namespace posemb::lab {

void shape_batch(Batch& out, std::size_t B, std::size_t T) {
  if (out.tokens.rows() != B || out.tokens.cols() != T) {
    out.tokens = Matrix<TokenId>(B, T);
    out.positions = Matrix<std::int64_t>(B, T);
    out.targets = Matrix<std::int32_t>(B, T);
  }
  out.row_tokens.assign(B, 0);
  out.counted = 0;
}

void sorted_sample(std::int64_t* out, std::size_t len, std::size_t range, Rng& rng) {
  std::size_t needed = len;
  for (std::size_t i = 0; i < range && needed > 0; ++i) {
    if (rng.below(range - i) < needed) {
      *out++ = static_cast<std::int64_t>(i);
      --needed;
    }
  }
}

void check_position_range(const char* op, std::size_t len, PositionMode mode, std::size_t range) {
  if (mode == PositionMode::randomized && len > range) {
    throw SequenceTooLong(op, len, 0, range, "randomized positions need distinct table rows");
  }
}

}  // namespace posemb::lab
