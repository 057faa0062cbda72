#include "posemb/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace posemb {
namespace {

std::system_error io_error(int err, std::string_view operation, std::string_view what,
                           const std::string& path) {
  return std::system_error(err, std::generic_category(),
                           std::string(operation) + ": " + std::string(what) + " '" + path + "'");
}

}  // namespace

FileSink::FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
  buf_.reserve(kBuf);
}

void FileSink::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n != 0) {
    const std::size_t take = std::min(n, kBuf - buf_.size());
    buf_.insert(buf_.end(), p, p + take);
    p += take;
    n -= take;
    if (buf_.size() == kBuf) flush();
  }
}

void FileSink::flush() {
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
                           const std::function<void(FileSink&)>& fill) {
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
    FileSink sink(fd, path);
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

void write_file_atomically(const std::string& path, std::string_view operation,
                           std::string_view bytes) {
  write_file_atomically(path, operation,
                        [&](FileSink& sink) { sink.write(bytes.data(), bytes.size()); });
}

}  // namespace posemb
