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

// A file that is not what its format promises (truncated, lying header, unknown dtype, not a
// regular file, ...). what() is "'PATH': problem", the path quoted with quote_untrusted.
// Derives from std::runtime_error. Thrown by the readers of posemb/safetensors.hpp,
// posemb/npy.hpp and posemb/position_table_file.hpp.
//
//   try {
//     auto f = posemb::read_safetensors("model.safetensors");
//   } catch (const posemb::FileFormatError& e) {
//     e.path();   // "model.safetensors"
//   }
class FileFormatError : public std::runtime_error {
 public:
  FileFormatError(std::string_view path, std::string_view problem);
  // The path as given (not quoted).
  const std::string& path() const noexcept { return path_; }
  // What is wrong, as given (the message without the quoted path in front).
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// Bytes from outside (a tensor name, metadata, a file header, a path) made safe to put in a
// message: single-quoted; backslash and quote escaped (\\, \'); control bytes (NUL included),
// DEL, C1 controls and bytes that are not UTF-8 as \xNN; Unicode line separators and bidi
// overrides as \uNNNN; other UTF-8 kept. At most max_bytes of input are shown, cut at a
// character boundary, followed by "... (N bytes)" when text is longer.
//
//   posemb::quote_untrusted("wpe\x1b[2J")   // 'wpe\x1b[2J' (the escape byte written as text)
std::string quote_untrusted(std::string_view text, std::size_t max_bytes = 200);

}  // namespace posemb
