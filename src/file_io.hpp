// src/file_io.hpp (internal): read-only file mapping and atomic file writes.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace posemb::detail {

// A whole file mapped read-only (mmap). Throws std::system_error naming `operation` and the
// path when the file cannot be opened or is not a regular file.
class MappedFile {
 public:
  MappedFile(const std::string& path, std::string_view operation);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Buffered output to a file descriptor; write() throws std::system_error on failure.
class Sink {
 public:
  Sink(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buf_.reserve(kBuf); }
  void write(const void* data, std::size_t n);
  void flush();

 private:
  static constexpr std::size_t kBuf = 1 << 20;
  int fd_;
  std::string path_;
  std::vector<char> buf_;
};

// Writes path atomically: `fill` writes the content to a temporary file in path's directory,
// which is then flushed, fsynced and renamed over path (the directory is fsynced too). If fill
// throws or any step fails, the temporary file is removed, path is left as it was, and the
// exception propagates (I/O failures as std::system_error naming `operation` and the path).
void write_file_atomically(const std::string& path, std::string_view operation,
                           const std::function<void(Sink&)>& fill);

}  // namespace posemb::detail
