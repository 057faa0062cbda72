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

#include "file_system.hpp"
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

// Temporary folders (write_folder_atomically), removed with their contents by
// remove_partial_files(): a separate, smaller table of the same kind.
constexpr std::size_t kFolderSlots = 8;
std::array<Slot, kFolderSlots> g_folder_slots;

class FolderRegistration {
 public:
  FolderRegistration(int dirfd, const std::string& name)
      : slot_(claim_slot(g_folder_slots, dirfd, name)) {}
  ~FolderRegistration() { release_slot(g_folder_slots, slot_); }
  FolderRegistration(const FolderRegistration&) = delete;
  FolderRegistration& operator=(const FolderRegistration&) = delete;

 private:
  int slot_ = -1;
};

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

// ---- files read (protect_read_files) ----

[[noreturn]] void refuse_input(std::string_view operation, const std::string& output,
                               const std::string& input, bool folder) {
  throw std::invalid_argument(std::string(operation) + ": the output " + (folder ? "folder " : "") +
                              quote_untrusted(output, 4096) + (folder ? " holds" : " is") +
                              " the input file " + quote_untrusted(input, 4096) +
                              "; write to another " + (folder ? "folder" : "file") +
                              " (posemb never replaces what it reads)");
}

// The first recorded file in the folder open as fd (entries of at most kMaxDepth levels), or
// nullopt. Takes fd.
std::optional<std::string> read_file_inside(int fd, int depth) {
  constexpr int kMaxDepth = 64;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return std::nullopt;
  }
  std::optional<std::string> found;
  while (!found) {
    const struct dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < kMaxDepth) {
      const int sub = ::openat(::dirfd(d), e->d_name,
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (sub >= 0) found = read_file_inside(sub, depth + 1);
    } else if (!S_ISDIR(st.st_mode)) {
      found = detail::read_as(detail::file_id_of(st));
    }
  }
  ::closedir(d);
  return found;
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
  if (keep_mode && detail::recording_reads()) {
    struct stat st {};
    if (::fstatat(dirfd.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (const auto input = detail::read_as(detail::file_id_of(st))) {
        refuse_input(operation, path, *input, false);
      }
    }
  }

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

// ---- folders ----

namespace {

// rel checked as a path inside a folder: relative, no empty, "." or ".." component, no NUL.
void check_relative(const std::string& operation, std::string_view rel, bool allow_empty) {
  const auto bad = [&](const char* why) {
    throw std::invalid_argument(operation + ": " + quote_untrusted(rel, 4096) + " " + why);
  };
  if (rel.empty()) {
    if (allow_empty) return;
    bad("is not a file name");
  }
  if (rel.find('\0') != std::string_view::npos) bad("holds a NUL byte; no file name can hold one");
  if (rel.front() == '/') bad("is an absolute path, not a path inside the folder");
  for (std::size_t at = 0; at <= rel.size();) {
    const std::size_t slash = std::min(rel.find('/', at), rel.size());
    const std::string_view part = rel.substr(at, slash - at);
    if (part.empty() || part == "." || part == "..") {
      bad("has an empty, '.' or '..' component; a path inside the folder names its folders");
    }
    at = slash + 1;
  }
}

// True when the folder open as fd has no entry but "." and "..". Takes fd.
bool folder_is_empty(int fd) {
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return false;
  }
  bool empty = true;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

FolderSink::FolderSink(std::string root, std::string operation)
    : root_(std::move(root)), operation_(std::move(operation)) {}

std::string FolderSink::path(std::string_view relative) {
  check_relative(operation_, relative, false);
  std::string p = root_;
  for (std::size_t at = 0;;) {
    const std::size_t slash = relative.find('/', at);
    if (slash == std::string_view::npos) break;
    p += "/";
    p += relative.substr(at, slash - at);
    if (::mkdir(p.c_str(), 0777) != 0) {
      const int err = errno;
      struct stat st {};
      if (err != EEXIST || ::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw io_error(err == EEXIST ? ENOTDIR : err,
                       operation_ + ": cannot make the folder " + quote_untrusted(p, 4096));
      }
    }
    at = slash + 1;
  }
  return root_ + "/" + std::string(relative);
}

void FolderSink::set_mode(std::string_view relative, unsigned mode) {
  check_relative(operation_, relative, true);
  const std::string p = relative.empty() ? root_ : root_ + "/" + std::string(relative);
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    throw io_error(errno, operation_ + ": cannot set the mode of " + quote_untrusted(p, 4096));
  }
  auto m = static_cast<mode_t>(mode & 01777);  // no set-user-ID or set-group-ID
  if (S_ISDIR(st.st_mode)) m |= S_IRWXU;       // the writer must still rename and clean up
  if (::chmod(p.c_str(), m) != 0) {
    throw io_error(errno, operation_ + ": cannot set the mode of " + quote_untrusted(p, 4096));
  }
}

void write_folder_atomically(const std::string& dir, std::string_view operation, bool replace,
                             const std::function<void(FolderSink&)>& fill) {
  detail::check_path(dir, operation);
  const std::string op(operation);
  const std::string what = op + ": output folder " + quote_untrusted(dir, 4096);
  std::filesystem::path target = std::filesystem::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (target.empty()) throw std::invalid_argument(op + ": no output folder named");
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") {
    throw std::invalid_argument(what +
                                " names the current folder, one above it or the root; name the "
                                "folder to write");
  }
  const std::string parent = target.has_parent_path() ? target.parent_path().string() : ".";
  Fd dirfd{::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dirfd.fd < 0) {
    throw io_error(errno,
                   what + " (cannot open its parent folder " + quote_untrusted(parent, 4096) + ")");
  }
  bool exists = false;
  struct stat st {};
  if (::fstatat(dirfd.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      throw std::invalid_argument(what +
                                  " is a symbolic link; posemb replaces only real folders (write "
                                  "to the folder the link points to)");
    }
    if (!S_ISDIR(st.st_mode)) throw std::invalid_argument(what + " exists and is not a directory");
    exists = true;
    const int fd = ::openat(dirfd.fd, name.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw io_error(errno, what + " (cannot open it)");
    if (!folder_is_empty(fd) && !replace) {
      throw std::invalid_argument(what + " exists and is not empty; pass --force to replace it");
    }
    refuse_overwriting_read_files(target.string(), operation);
  } else if (errno != ENOENT) {
    throw io_error(errno, what + " (cannot stat it)");
  }

  // The temporary folder, recorded before it exists (a signal after the mkdir finds it).
  std::string tmp;
  std::optional<FolderRegistration> registered;
  for (int attempt = 0;; ++attempt) {
    tmp = temp_name();
    registered.emplace(dirfd.fd, tmp);
    if (::mkdirat(dirfd.fd, tmp.c_str(), 0777) == 0) break;  // 0777 & ~umask, as mkdir(1)
    const int err = errno;
    registered.reset();
    if (err != EEXIST || attempt + 1 >= kCreateAttempts) {
      throw io_error(err, what + " (cannot create a temporary folder in " +
                              quote_untrusted(parent, 4096) + ")");
    }
  }
  const std::string old = tmp + "-old";
  bool moved_old = false, swapped = false;
  try {
    FolderSink sink(parent + "/" + tmp, op);
    fill(sink);
    Fd tmpfd{::openat(dirfd.fd, tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (tmpfd.fd >= 0) (void)::fsync(tmpfd.fd);  // its entries durable (best effort)
    if (exists) {
      // One step where the file system can: the old folder takes the temporary's recorded name,
      // so that a signal from here on removes it and the output is never missing.
      if (::renameat2(dirfd.fd, tmp.c_str(), dirfd.fd, name.c_str(), RENAME_EXCHANGE) == 0) {
        swapped = true;
      } else if (errno != EINVAL && errno != ENOSYS) {
        throw io_error(errno, what + " (cannot replace it)");
      } else {
        if (::renameat(dirfd.fd, name.c_str(), dirfd.fd, old.c_str()) != 0) {
          throw io_error(errno, what + " (cannot move the old folder aside)");
        }
        moved_old = true;
      }
    }
    if (!swapped && ::renameat(dirfd.fd, tmp.c_str(), dirfd.fd, name.c_str()) != 0) {
      throw io_error(errno, what + " (cannot rename the temporary folder onto it)");
    }
  } catch (...) {
    if (!swapped) remove_tree(dirfd.fd, tmp.c_str(), 0);
    if (moved_old) (void)::renameat(dirfd.fd, old.c_str(), dirfd.fd, name.c_str());
    throw;
  }
  if (swapped) remove_tree(dirfd.fd, tmp.c_str(), 0);  // the old folder, still recorded
  if (moved_old) remove_tree(dirfd.fd, old.c_str(), 0);
  (void)::fsync(dirfd.fd);
}

void protect_read_files(bool on) {
  detail::set_recording_reads(on);
}

void refuse_overwriting_read_files(const std::string& path, std::string_view operation) {
  detail::check_path(path, operation);
  if (!detail::recording_reads()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    if (const auto input = detail::read_as(detail::file_id_of(st))) {
      refuse_input(operation, path, *input, false);
    }
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  if (const auto input = read_file_inside(fd, 0)) refuse_input(operation, path, *input, true);
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
