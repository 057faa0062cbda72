// src/io/mapped_file.hpp (internal): the one way posemb reads a file: a regular file, opened
// once without blocking, mapped read-only. The public posemb::read_file_bytes
// (posemb/read_file.hpp, implemented in mapped_file.cpp) takes the same steps and copies the
// bytes. Writing goes through the public posemb/atomic_file.hpp; the path is checked
// (file_system.hpp: check_path) and, while protect_read_files is on, the file recorded as read.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "file_system.hpp"

namespace posemb::detail {

// A whole file mapped read-only (mmap, MAP_PRIVATE); pages are read from disk only when
// touched. Shared, so that tensors viewing the mapping keep it alive. Files of at most
// kCopyBytes are read into private memory instead (one pread pass): truncating them afterwards
// changes nothing. A larger file truncated by another process while mapped raises SIGBUS when a
// page past the new end is touched (the one known limit, docs/files.md).
class MappedFile {
 public:
  static constexpr std::size_t kCopyBytes = std::size_t{1} << 20;

  // Opens path with O_NONBLOCK (a FIFO or a device cannot make the open hang), then refuses
  // anything that is not a regular file with FileFormatError ("not a regular file: a FIFO").
  // Throws std::system_error naming `operation` and the path when the file cannot be opened,
  // stat'ed or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path,
                                                std::string_view operation);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  MappedFile() = default;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace posemb::detail
