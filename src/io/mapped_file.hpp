// src/io/mapped_file.hpp (internal): read-only file mapping. Writing goes through the public
// posemb/atomic_file.hpp.
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

}  // namespace posemb::detail
