#include "posemb/positions.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "posemb/errors.hpp"
#include "resolve_positions.hpp"

namespace posemb {
namespace {

std::string where(std::size_t b, std::size_t t) {
  return "batch row " + std::to_string(b) + ", token " + std::to_string(t);
}

std::string shape(std::size_t r, std::size_t c) {
  std::string s = std::to_string(r);
  s += ", ";
  s += std::to_string(c);
  return '(' + s + ')';
}

void check_shape(const char* op, const char* what, std::size_t rows, std::size_t cols,
                 std::size_t batch, std::size_t seq_len) {
  if (rows != batch || cols != seq_len) {
    throw std::invalid_argument(std::string(op) + ": " + what + " has shape " + shape(rows, cols) +
                                " but the batch is " + shape(batch, seq_len) + " (B, T)");
  }
}

void check_nonempty(const char* op, std::size_t batch, std::size_t seq_len) {
  if (batch == 0 || seq_len == 0) {
    throw std::invalid_argument(std::string(op) + ": empty batch " + shape(batch, seq_len) +
                                " (B, T); B and T must both be at least 1");
  }
}

// Element (b, t) of a mask as an integer. A bool mask is read as its byte, so that a byte other
// than 0 and 1 (not a valid bool) is reported instead of being undefined behaviour.
template <class T>
std::int64_t mask_value(MatrixView<const T> mask, std::size_t b, std::size_t t) {
  if constexpr (std::is_same_v<T, bool>) {
    static_assert(sizeof(bool) == 1);
    unsigned char byte = 0;
    std::memcpy(&byte, &mask(b, t), 1);
    return byte;
  } else {
    return static_cast<std::int64_t>(mask(b, t));
  }
}

// The call's numbers for explicit ids past the table: the range of its ids (lowest..highest
// non-negative id, so the rows the call needs) and how many there are, then the first id past
// the table (batch row b, token t).
template <class T>
[[noreturn]] void throw_ids_past_table(MatrixView<const T> ids, std::size_t max_seq_len,
                                       const char* op, std::string_view remedy, std::size_t b,
                                       std::size_t t) {
  const auto first = static_cast<std::uint64_t>(ids(b, t));
  std::uint64_t low = first, high = first;
  for (std::size_t r = 0; r < ids.rows(); ++r) {
    for (std::size_t c = 0; c < ids.cols(); ++c) {
      const std::int64_t v = ids(r, c);
      if (v < 0) continue;
      low = std::min(low, static_cast<std::uint64_t>(v));
      high = std::max(high, static_cast<std::uint64_t>(v));
    }
  }
  const std::string detail = std::to_string(ids.rows() * ids.cols()) + " explicit position ids " +
                             std::to_string(low) + ".." + std::to_string(high) + " in a " +
                             shape(ids.rows(), ids.cols()) +
                             " batch; the first past the table: " + where(b, t) +
                             ", explicit position id " + std::to_string(first);
  throw SequenceTooLong(op, static_cast<std::size_t>(high - low) + 1, static_cast<std::size_t>(low),
                        max_seq_len, detail, remedy);
}

template <class T>
void resolve_explicit(Matrix<std::int64_t>& pos, MatrixView<const T> ids, std::size_t max_seq_len,
                      const char* op, std::string_view remedy) {
  check_shape(op, "position ids", ids.rows(), ids.cols(), pos.rows(), pos.cols());
  for (std::size_t b = 0; b < pos.rows(); ++b) {
    for (std::size_t t = 0; t < pos.cols(); ++t) {
      const std::int64_t p = ids(b, t);
      if (p < 0) {
        throw std::out_of_range(std::string(op) + ": position id " + std::to_string(p) + " at " +
                                where(b, t) + " is negative");
      }
      if (static_cast<std::uint64_t>(p) >= max_seq_len) {
        throw_ids_past_table(ids, max_seq_len, op, remedy, b, t);
      }
      pos(b, t) = p;
    }
  }
}

template <class T>
void resolve_mask(Matrix<std::int64_t>& pos, MatrixView<const T> mask, std::size_t max_seq_len,
                  const char* op, std::string_view remedy) {
  check_shape(op, "padding mask", mask.rows(), mask.cols(), pos.rows(), pos.cols());
  for (std::size_t b = 0; b < pos.rows(); ++b) {
    std::size_t next = 0;
    for (std::size_t t = 0; t < pos.cols(); ++t) {
      const std::int64_t m = mask_value(mask, b, t);
      if (m != 0 && m != 1) {
        throw std::invalid_argument(std::string(op) + ": padding mask value " + std::to_string(m) +
                                    " at " + where(b, t) +
                                    " is neither 0 (pad) nor 1 (real token)");
      }
      if (m == 0) {
        pos(b, t) = -1;
        continue;
      }
      if (next >= max_seq_len) {
        // The call's numbers: the real tokens of this row need that many rows.
        std::size_t real = 0;
        for (std::size_t j = 0; j < pos.cols(); ++j) real += mask_value(mask, b, j) == 1 ? 1 : 0;
        throw SequenceTooLong(op, real, 0, max_seq_len,
                              std::to_string(real) + " real tokens in batch row " +
                                  std::to_string(b) + "; the first past the table at " +
                                  where(b, t) + ", real token number " + std::to_string(next),
                              remedy);
      }
      pos(b, t) = static_cast<std::int64_t>(next++);
    }
  }
}

}  // namespace

PositionSource PositionSource::contiguous(std::size_t start) {
  PositionSource s;
  s.kind_ = Kind::contiguous;
  s.start_ = start;
  return s;
}

PositionSource PositionSource::explicit_ids(MatrixView<const std::int32_t> ids) {
  PositionSource s;
  s.kind_ = Kind::explicit_ids;
  s.ids_ = ids;
  return s;
}

PositionSource PositionSource::explicit_ids(MatrixView<const std::int64_t> ids) {
  PositionSource s;
  s.kind_ = Kind::explicit_ids;
  s.ids_ = ids;
  return s;
}

PositionSource PositionSource::padding_mask(MatrixView<const std::uint8_t> mask) {
  PositionSource s;
  s.kind_ = Kind::padding_mask;
  s.mask_ = mask;
  return s;
}

PositionSource PositionSource::padding_mask(MatrixView<const bool> mask) {
  PositionSource s;
  s.kind_ = Kind::padding_mask;
  s.mask_ = mask;
  return s;
}

PositionSource PositionSource::padding_mask(MatrixView<const std::int32_t> mask) {
  PositionSource s;
  s.kind_ = Kind::padding_mask;
  s.mask_ = mask;
  return s;
}

PositionSource PositionSource::padding_mask(MatrixView<const std::int64_t> mask) {
  PositionSource s;
  s.kind_ = Kind::padding_mask;
  s.mask_ = mask;
  return s;
}

PositionSource PositionSource::packed(MatrixView<const TokenId> tokens, TokenId separator) {
  PositionSource s;
  s.kind_ = Kind::packed;
  s.tokens_ = tokens;
  s.separator_ = separator;
  return s;
}

Matrix<std::int64_t> resolve_positions(const PositionSource& src, MatrixView<const TokenId> tokens,
                                       std::size_t max_seq_len) {
  return detail::resolve_positions(src, tokens.rows(), tokens.cols(), max_seq_len,
                                   "resolve_positions", {});
}

Matrix<std::int64_t> resolve_positions(const PositionSource& src, std::size_t batch,
                                       std::size_t seq_len, std::size_t max_seq_len,
                                       const char* operation) {
  // A null name is the default one (messages would otherwise read through a null pointer).
  if (operation == nullptr) operation = "resolve_positions";
  return detail::resolve_positions(src, batch, seq_len, max_seq_len, operation, {});
}

void detail::check_contiguous_positions(std::size_t start, std::size_t batch, std::size_t seq_len,
                                        std::size_t max_seq_len, const char* op,
                                        std::string_view remedy) {
  check_nonempty(op, batch, seq_len);
  if (start > max_seq_len || seq_len > max_seq_len - start) {
    // The first token without a row: index max_seq_len - start (0 when start is past it).
    const std::size_t t = start >= max_seq_len ? 0 : max_seq_len - start;
    throw SequenceTooLong(op, seq_len, start, max_seq_len,
                          where(0, t) + ", the first token without a row", remedy);
  }
  // Positions are int64 (negative means "no position"): start + t must stay a valid one.
  constexpr auto kMaxPosition = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
  if (start > kMaxPosition || seq_len - 1 > kMaxPosition - start) {
    throw std::out_of_range(std::string(op) + ": contiguous positions from " +
                            std::to_string(start) + " for " + std::to_string(seq_len) +
                            " tokens pass 2^63 - 1, the largest position id");
  }
}

Matrix<std::int64_t> detail::resolve_positions(const PositionSource& src, std::size_t batch,
                                               std::size_t seq_len, std::size_t max_seq_len,
                                               const char* op, std::string_view remedy) {
  if (src.kind() == PositionSource::Kind::contiguous) {
    check_contiguous_positions(src.start(), batch, seq_len, max_seq_len, op, remedy);
  } else {
    check_nonempty(op, batch, seq_len);
  }
  Matrix<std::int64_t> pos(batch, seq_len);
  switch (src.kind()) {
    case PositionSource::Kind::contiguous: {
      const std::size_t start = src.start();
      for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t t = 0; t < seq_len; ++t) {
          pos(b, t) = static_cast<std::int64_t>(start + t);
        }
      }
      break;
    }
    case PositionSource::Kind::explicit_ids:
      std::visit([&](auto ids) { resolve_explicit(pos, ids, max_seq_len, op, remedy); }, src.ids());
      break;
    case PositionSource::Kind::padding_mask:
      std::visit([&](auto mask) { resolve_mask(pos, mask, max_seq_len, op, remedy); }, src.mask());
      break;
    case PositionSource::Kind::packed: {
      const auto tokens = src.tokens();
      check_shape(op, "packed tokens", tokens.rows(), tokens.cols(), batch, seq_len);
      const TokenId sep = src.separator();
      for (std::size_t b = 0; b < batch; ++b) {
        std::size_t next = 0;
        for (std::size_t t = 0; t < seq_len; ++t) {
          if (next >= max_seq_len) {
            throw SequenceTooLong(
                op, 1, next, max_seq_len,
                where(b, t) + ", packed document position " + std::to_string(next), remedy);
          }
          pos(b, t) = static_cast<std::int64_t>(next);
          next = tokens(b, t) == sep ? 0 : next + 1;
        }
      }
      break;
    }
  }
  return pos;
}

}  // namespace posemb
