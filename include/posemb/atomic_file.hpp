// posemb/atomic_file.hpp: the one way posemb writes a file: atomically, so that a reader sees
// either the old file or the whole new one, never a partial one.
//
//   posemb::write_file_atomically("out/results.csv", "eval", [&](posemb::FileSink& sink) {
//     sink.write(text.data(), text.size());
//   });
//   posemb::write_file_atomically("out/plot.png", "demo", png_bytes);   // bytes in memory
//
// How: `fill` writes into a new temporary file created exclusively (O_EXCL, never following a
// symbolic link) in the target's directory; the temporary is flushed, fsynced and renamed over
// the target, and the directory is fsynced. If fill throws or any step fails, the temporary is
// removed, the target is left as it was, and the exception propagates (I/O failures as
// std::system_error naming the operation, the path and the reason).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace posemb {

// Buffered output to the temporary file of write_file_atomically; write() throws
// std::system_error on failure.
class FileSink {
 public:
  FileSink(int fd, std::string path);
  void write(const void* data, std::size_t n);
  void flush();

 private:
  static constexpr std::size_t kBuf = 1 << 20;
  int fd_;
  std::string path_;
  std::vector<char> buf_;
};

// Writes path atomically with the content `fill` writes into the sink. `operation` names the
// caller in error messages ("write_safetensors", "posemb eval").
void write_file_atomically(const std::string& path, std::string_view operation,
                           const std::function<void(FileSink&)>& fill);

// The same for content already in memory.
void write_file_atomically(const std::string& path, std::string_view operation,
                           std::string_view bytes);

}  // namespace posemb
