#include "mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/read_file.hpp"

namespace posemb::detail {
namespace {

std::system_error io_error(int err, std::string_view operation, std::string_view what,
                           const std::string& path) {
  return std::system_error(
      err, std::generic_category(),
      std::string(operation) + ": " + std::string(what) + " " + quote_untrusted(path, 4096));
}

// Closes fd on every path out of open().
struct FdGuard {
  int fd;
  explicit FdGuard(int f) noexcept : fd(f) {}
  FdGuard(FdGuard&& o) noexcept : fd(o.fd) { o.fd = -1; }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  FdGuard& operator=(FdGuard&&) = delete;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

namespace {

// The file at path opened without blocking (a FIFO or a device cannot make the open hang) and
// checked to be a regular file whose size is known; `refusal` ends the message for anything
// else ("posemb reads tensors from regular files only").
struct OpenRegular {
  FdGuard fd;
  std::size_t size;
};
OpenRegular open_regular(const std::string& path, std::string_view operation,
                         std::string_view refusal) {
  check_path(path, operation);
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (fd.fd < 0) throw io_error(errno, operation, "cannot open", path);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw io_error(errno, operation, "cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    throw FileFormatError(path, std::string("not a regular file (") + file_type(st.st_mode) +
                                    "); " + std::string(refusal));
  }
  record_read(st, path);
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    // /proc and /sys files say 0 bytes and yet hold text: their size is not known up front.
    char probe = 0;
    ssize_t n = 0;
    do {
      n = ::read(fd.fd, &probe, 1);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      throw FileFormatError(path,
                            "reports a size of 0 bytes but holds data (a /proc or /sys file?); "
                            "posemb reads regular files whose size is known");
    }
  }
  return {std::move(fd), size};
}

// Reads the first `size` bytes of the open file into out (pread, restarted on EINTR).
void read_exactly(int fd, char* out, std::size_t size, std::string_view operation,
                  const std::string& path) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(errno, operation, "cannot read", path);
    if (n == 0) {
      throw FileFormatError(path, "the file shrank from " + std::to_string(size) + " to " +
                                      std::to_string(done) + " bytes while it was read");
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path,
                                                   std::string_view operation) {
  const OpenRegular file =
      open_regular(path, operation, "posemb reads tensors from regular files only");
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->size_ = file.size;
  if (f->size_ == 0) return f;
  if (f->size_ > kCopyBytes) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, file.fd.fd, 0);
    if (p == MAP_FAILED) throw io_error(errno, operation, "cannot map", path);
    f->data_ = static_cast<const std::byte*>(p);
    return f;  // the mapping stays valid after the descriptor is closed
  }
  // A small file is read into private memory: truncating the file afterwards cannot reach it.
  void* p = ::mmap(nullptr, f->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw io_error(errno, operation, "cannot allocate memory for", path);
  f->data_ = static_cast<const std::byte*>(p);  // owned by f from here: unmapped on a throw
  read_exactly(file.fd.fd, static_cast<char*>(p), f->size_, operation, path);
  ::mprotect(p, f->size_, PROT_READ);
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace posemb::detail

namespace posemb {

std::string read_file_bytes(const std::string& path, std::string_view operation) {
  const detail::OpenRegular file =
      detail::open_regular(path, operation, std::string(operation) + " reads regular files only");
  check_allocation(operation, file.size);  // before a byte is allocated or read
  std::string out(file.size, '\0');
  detail::read_exactly(file.fd.fd, out.data(), file.size, operation, path);
  return out;
}

}  // namespace posemb
