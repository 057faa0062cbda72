#include "posemb/errors.hpp"

#include <limits>
#include <string>

namespace posemb {
namespace {

__extension__ using uint128 = unsigned __int128;

// Decimal text of start + seq_len computed exactly in 128 bits (it can exceed SIZE_MAX).
std::string exact_sum(std::size_t a, std::size_t b) {
  uint128 v = static_cast<uint128>(a) + b;
  if (v == 0) return "0";
  std::string s;
  while (v != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

std::string make_message(std::string_view operation, std::size_t seq_len, std::size_t start,
                         std::size_t max_seq_len, std::string_view detail,
                         std::string_view remedy) {
  const std::string end = exact_sum(start, seq_len);
  std::string m(operation);
  m += ": seq_len = " + std::to_string(seq_len) +
       " positions starting at start = " + std::to_string(start) + " need rows [" +
       std::to_string(start) + ", " + end +
       ") of the position table, but it has max_seq_len = " + std::to_string(max_seq_len) + " rows";
  if (!detail.empty()) {
    m += " (";
    m += detail;
    m += ")";
  }
  m += ". ";
  if (remedy.empty()) {
    m += "Use a longer table (at least " + end +
         " rows), extend this table (resize_table, `posemb resize`), or use an encoding that can "
         "be computed at any position (sinusoidal_positional_encoding)";
  } else {
    m += remedy;
  }
  return m;
}

}  // namespace

SequenceTooLong::SequenceTooLong(std::string_view operation, std::size_t seq_len, std::size_t start,
                                 std::size_t max_seq_len, std::string_view detail,
                                 std::string_view remedy)
    : std::out_of_range(make_message(operation, seq_len, start, max_seq_len, detail, remedy)),
      seq_len_(seq_len),
      start_(start),
      max_seq_len_(max_seq_len) {}

bool SequenceTooLong::required_rows_overflowed() const noexcept {
  return seq_len_ > std::numeric_limits<std::size_t>::max() - start_;
}

std::size_t SequenceTooLong::required_rows() const noexcept {
  return required_rows_overflowed() ? std::numeric_limits<std::size_t>::max() : start_ + seq_len_;
}

}  // namespace posemb
