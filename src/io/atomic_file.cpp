#include "posemb/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "mapped_file.hpp"
#include "partial_folder.hpp"
#include "posemb/errors.hpp"

namespace posemb {
namespace {

constexpr std::string_view kTempPrefix = ".posemb-";
constexpr std::size_t kTempRandomChars = 10;
constexpr int kCreateAttempts = 100;

std::system_error io_error(int err, const std::string& what) {
  return std::system_error(err, std::generic_category(), what);
}

// ---- the registry of temporaries, read by remove_partial_files() from signal handlers ----

static_assert(std::atomic<int>::is_always_lock_free, "the registry must be async-signal-safe");

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled in, 2 a temporary that may exist
  int dirfd = -1;
  std::array<char, 32> name{};
};
constexpr std::size_t kSlots = 64;
std::array<Slot, kSlots> g_slots;

// Takes a free slot of `slots` for (dirfd, name); its index, or -1 when none is free.
int claim_slot(std::span<Slot> slots, int dirfd, const std::string& name) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    int expected = 0;
    if (slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      slots[i].dirfd = dirfd;
      slots[i].name.fill('\0');
      std::memcpy(slots[i].name.data(), name.data(),
                  std::min(name.size(), slots[i].name.size() - 1));
      slots[i].state.store(2, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void release_slot(std::span<Slot> slots, int slot) {
  if (slot >= 0) slots[static_cast<std::size_t>(slot)].state.store(0, std::memory_order_release);
}

// Records (dirfd, name) for the lifetime of the object (when a slot is free).
class Registration {
 public:
  Registration(int dirfd, const std::string& name) : slot_(claim_slot(g_slots, dirfd, name)) {}
  ~Registration() { release_slot(g_slots, slot_); }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  int slot_ = -1;
};

// Temporary folders (write_checkpoint_folder), removed with their contents by
// remove_partial_files(): a separate, smaller table of the same kind.
constexpr std::size_t kFolderSlots = 8;
std::array<Slot, kFolderSlots> g_folder_slots;

// Removes the folder `name` in dirfd and everything in it, with system calls only (openat,
// getdents64, unlinkat, close: async-signal-safe); at most kMaxDepth levels of folders.
void remove_tree(int dirfd, const char* name, int depth) noexcept {
  constexpr int kMaxDepth = 16;
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    bool removed_some = true;
    while (removed_some) {  // entries removed while reading: read again until none is left
      removed_some = false;
      ::lseek(fd, 0, SEEK_SET);
      for (;;) {
        const ssize_t n = ::getdents64(fd, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t at = 0; at < n;) {
          const auto* e = reinterpret_cast<const struct dirent64*>(buf + at);
          at += e->d_reclen;
          const char* f = e->d_name;
          if (f[0] == '.' && (f[1] == '\0' || (f[1] == '.' && f[2] == '\0'))) continue;
          if (::unlinkat(fd, f, 0) == 0) {
            removed_some = true;
          } else if ((errno == EISDIR || e->d_type == DT_DIR) && depth < kMaxDepth) {
            remove_tree(fd, f, depth + 1);
            removed_some = true;
          }
        }
      }
    }
    ::close(fd);
  }
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

}  // namespace

namespace detail {

PartialFolder::PartialFolder(int parent_fd, const std::string& name)
    : slot_(claim_slot(g_folder_slots, parent_fd, name)) {}

PartialFolder::~PartialFolder() {
  release_slot(g_folder_slots, slot_);
}

}  // namespace detail

namespace {

// ---- the target ----

// The permission bits the new file must get: std::nullopt for a new file (created 0666, the
// umask applies), the replaced file's bits otherwise. Refuses targets that are not regular
// files with std::invalid_argument.
std::optional<mode_t> target_mode(int dirfd, const std::string& name, const std::string& what) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw io_error(errno, what + " (cannot stat it)");
  }
  if (S_ISREG(st.st_mode)) return st.st_mode & 0777;
  if (S_ISLNK(st.st_mode)) {
    throw std::invalid_argument(what +
                                ": it is a symbolic link; posemb replaces only regular "
                                "files (write to the file the link points to)");
  }
  throw std::invalid_argument(what + ": it is " + detail::file_type(st.st_mode) +
                              ", not a regular file; posemb replaces only regular files");
}

// kTempPrefix + 10 random characters from [0-9a-z].
std::string temp_name() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    static std::atomic<std::uint64_t> counter{0};
    r = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<std::uint64_t>(::getpid()) << 32) ^
        (counter.fetch_add(1) * 0x9e3779b97f4a7c15);
  }
  std::string s(kTempPrefix);
  for (std::size_t i = 0; i < kTempRandomChars; ++i) {
    s += "0123456789abcdefghijklmnopqrstuvwxyz"[r % 36];
    r /= 36;
  }
  return s;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() noexcept { return std::exchange(fd, -1); }
};

}  // namespace

FileSink::FileSink(int fd, std::string what) : fd_(fd), what_(std::move(what)) {
  buf_.reserve(kBuf);
}

void FileSink::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  if (n >= kBuf) {  // large: no copy through the buffer
    flush();
    while (n != 0) {
      const ssize_t w = ::write(fd_, p, std::min<std::size_t>(n, 1u << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw io_error(errno, what_);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return;
  }
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
      throw io_error(errno, what_);
    }
    done += static_cast<std::size_t>(w);
  }
  buf_.clear();
}

void write_file_atomically(const std::string& path, std::string_view operation,
                           const std::function<void(FileSink&)>& fill) {
  detail::check_path(path, operation);
  const std::string op(operation);
  const std::string what = op + ": cannot write " + quote_untrusted(path, 4096);
  const std::filesystem::path target(path);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") {
    throw std::invalid_argument(what + ": it names a directory, not a file");
  }
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  Fd dirfd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dirfd.fd < 0) {
    throw io_error(errno, what + " (cannot open its directory " + quote_untrusted(dir, 4096) + ")");
  }
  const std::optional<mode_t> keep_mode = target_mode(dirfd.fd, name, what);

  for (int attempt = 0;; ++attempt) {
    const std::string tmp = temp_name();
    const Registration registered(dirfd.fd, tmp);  // before the file exists: a signal removes it
    // A new file is created 0666 (the umask applies, giving its final mode); a replacement 0600
    // until its data is written, then given the replaced file's mode.
    Fd fd{::openat(dirfd.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   keep_mode ? 0600 : 0666)};
    if (fd.fd < 0) {
      if (errno == EEXIST && attempt + 1 < kCreateAttempts) continue;
      throw io_error(
          errno, what + " (cannot create a temporary file in " + quote_untrusted(dir, 4096) + ")");
    }
    try {
      FileSink sink(fd.fd, what);
      fill(sink);
      sink.flush();
      if (keep_mode && ::fchmod(fd.fd, *keep_mode) != 0) {
        throw io_error(errno, what + " (cannot set the mode of the temporary file)");
      }
      if (::fsync(fd.fd) != 0) throw io_error(errno, what + " (fsync failed)");
      if (::close(fd.release()) != 0) throw io_error(errno, what + " (close failed)");
      if (::renameat(dirfd.fd, tmp.c_str(), dirfd.fd, name.c_str()) != 0) {
        throw io_error(errno, what + " (cannot rename the temporary file onto it)");
      }
    } catch (...) {
      if (fd.fd >= 0) ::close(fd.release());
      ::unlinkat(dirfd.fd, tmp.c_str(), 0);
      throw;
    }
    break;
  }
  // Make the rename durable. The file is complete and in place whatever happens here, so a
  // failure (some file systems refuse fsync on directories) is not reported.
  (void)::fsync(dirfd.fd);
}

void write_file_atomically(const std::string& path, std::string_view operation,
                           std::string_view bytes) {
  write_file_atomically(path, operation,
                        [&](FileSink& sink) { sink.write(bytes.data(), bytes.size()); });
}

void remove_partial_files() noexcept {
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) {
      ::unlinkat(s.dirfd, s.name.data(), 0);
    }
  }
  for (Slot& s : g_folder_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) remove_tree(s.dirfd, s.name.data(), 0);
  }
}

}  // namespace posemb
