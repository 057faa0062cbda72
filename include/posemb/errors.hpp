// posemb/errors.hpp: the exceptions posemb throws that are its own types.
//
// Every posemb exception derives from a standard one (std::invalid_argument, std::out_of_range,
// std::runtime_error, ...) and its what() names the operation and the numbers involved.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace posemb {

// A sequence needs positions the position table does not have: start + seq_len > max_seq_len
// (compared without overflow). Thrown by learned_positional_embedding and by every operation
// that looks positions up in a learned table. Derives from std::out_of_range.
//
//   try {
//     auto rows = posemb::learned_positional_embedding(2000, table);   // table has 1024 rows
//   } catch (const posemb::SequenceTooLong& e) {
//     // e.seq_len() == 2000, e.start() == 0, e.max_seq_len() == 1024
//   }
class SequenceTooLong : public std::out_of_range {
 public:
  // operation: the public function that refused ("learned_positional_embedding").
  // detail: optional context appended to the message, such as "batch row 3, token 17".
  // remedy: what to do instead, replacing the default advice (a longer table, resize_table, or
  // an encoding computed at any position), for tables that are not learned (a RopeCache).
  SequenceTooLong(std::string_view operation, std::size_t seq_len, std::size_t start,
                  std::size_t max_seq_len, std::string_view detail = {},
                  std::string_view remedy = {});

  std::size_t seq_len() const noexcept { return seq_len_; }
  std::size_t start() const noexcept { return start_; }
  std::size_t max_seq_len() const noexcept { return max_seq_len_; }
  // start + seq_len without overflow: the number of rows the sequence needs. Saturates at
  // SIZE_MAX when the true sum does not fit (required_rows_overflowed() then says so).
  std::size_t required_rows() const noexcept;
  bool required_rows_overflowed() const noexcept;

 private:
  std::size_t seq_len_;
  std::size_t start_;
  std::size_t max_seq_len_;
};

}  // namespace posemb
