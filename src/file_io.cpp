#include "file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace posemb::detail {
namespace {

std::system_error io_error(int err, std::string_view operation, std::string_view what,
                           const std::string& path) {
  return std::system_error(err, std::generic_category(),
                           std::string(operation) + ": " + std::string(what) + " '" + path + "'");
}

}  // namespace

MappedFile::MappedFile(const std::string& path, std::string_view operation) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(errno, operation, "cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw io_error(err, operation, "cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw io_error(EINVAL, operation, "not a regular file:", path);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ != 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw io_error(err, operation, "cannot map", path);
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

void Sink::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n != 0) {
    const std::size_t take = std::min(n, kBuf - buf_.size());
    buf_.insert(buf_.end(), p, p + take);
    p += take;
    n -= take;
    if (buf_.size() == kBuf) flush();
  }
}

void Sink::flush() {
  std::size_t done = 0;
  while (done < buf_.size()) {
    const ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw io_error(errno, "write", "cannot write temporary file for", path_);
    }
    done += static_cast<std::size_t>(w);
  }
  buf_.clear();
}

void write_file_atomically(const std::string& path, std::string_view operation,
                           const std::function<void(Sink&)>& fill) {
  const std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = dir.string();
  tmpl.append("/.");
  tmpl.append(target.filename().string());
  tmpl.append(".tmp-XXXXXX");
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw io_error(errno, operation, "cannot create a temporary file beside", path);
  bool closed = false;
  try {
    if (::fchmod(fd, 0644) != 0) throw io_error(errno, operation, "cannot chmod", tmpl);
    Sink sink(fd, path);
    fill(sink);
    sink.flush();
    if (::fsync(fd) != 0) throw io_error(errno, operation, "cannot fsync", tmpl);
    closed = true;
    if (::close(fd) != 0) throw io_error(errno, operation, "cannot close", tmpl);
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
      throw io_error(errno, operation, "cannot rename the temporary file onto", path);
    }
  } catch (...) {
    if (!closed) ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  // Make the rename itself durable; a failure here leaves a complete file, so it is ignored.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace posemb::detail
