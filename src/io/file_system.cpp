#include "file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "posemb/errors.hpp"

namespace posemb::detail {
namespace {

constexpr int kMaxFolderDepth = 64;
constexpr std::size_t kMaxFolderEntries = 1000000;
constexpr int kMaxParents = 4096;  // folders walked up from a path to the root

std::system_error io_error(int err, std::string_view operation, std::string_view what,
                           const std::string& path) {
  return std::system_error(
      err, std::generic_category(),
      std::string(operation) + ": " + std::string(what) + " " + quote_untrusted(path, 4096));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct Record {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, std::string> files;
};
Record& record() {
  static Record r;
  return r;
}
std::atomic<bool> g_recording{false};

// The entries of the folder open as fd (relative to `prefix`), appended to out, depth-first.
void list_into(int fd, const std::string& root, const std::string& prefix, int depth,
               std::string_view operation, std::string_view why_links,
               std::vector<FolderEntry>& out) {
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    throw io_error(err, operation, "cannot list", root + (prefix.empty() ? "" : "/" + prefix));
  }
  struct Closer {
    DIR* d;
    ~Closer() { ::closedir(d); }
  } closer{d};
  std::vector<std::string> names;
  errno = 0;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    if (out.size() + names.size() > kMaxFolderEntries) {
      throw FileFormatError(root, "holds more than " + std::to_string(kMaxFolderEntries) +
                                      " files and folders; posemb reads folders of at most that "
                                      "many");
    }
    errno = 0;
  }
  if (errno != 0) throw io_error(errno, operation, "cannot list", root + "/" + prefix);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string rel = prefix.empty() ? n : prefix + "/" + n;
    const std::string shown = root + "/" + rel;
    struct stat st {};
    if (::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      throw io_error(errno, operation, "cannot stat", shown);
    }
    if (S_ISLNK(st.st_mode)) {
      throw FileFormatError(shown, "is a symbolic link; " + std::string(why_links));
    }
    if (S_ISDIR(st.st_mode)) {
      if (depth >= kMaxFolderDepth) {
        throw FileFormatError(
            shown, "is nested more than " + std::to_string(kMaxFolderDepth) + " folders deep");
      }
      out.push_back({rel, st.st_mode, true});
      const int sub = ::openat(::dirfd(d), n.c_str(),
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (sub < 0) throw io_error(errno, operation, "cannot open", shown);
      list_into(sub, root, rel, depth + 1, operation, why_links, out);
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      throw FileFormatError(shown,
                            std::string("is not a regular file (") + file_type(st.st_mode) + ")");
    }
    record_read(st, shown);
    out.push_back({rel, st.st_mode, false});
  }
}

}  // namespace

void check_path(const std::string& path, std::string_view operation) {
  const std::size_t nul = path.find('\0');
  if (nul == std::string::npos) return;
  throw std::invalid_argument(std::string(operation) + ": the path " + quote_untrusted(path, 4096) +
                              " holds a NUL byte at offset " + std::to_string(nul) +
                              "; no file name can hold one");
}

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::optional<FileId> file_id(const std::string& path, std::string_view operation) {
  check_path(path, operation);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return file_id_of(st);
}

bool same_or_inside(const std::string& inner, const std::string& outer,
                    std::string_view operation) {
  check_path(inner, operation);
  const auto target = file_id(outer, operation);
  if (!target) return false;
  // The nearest existing folder of inner: inner itself, or a parent named by dropping its last
  // components. (A missing path's parents are found by name; from the first that exists on, by
  // "..", so that symbolic links and bind mounts are followed as the kernel does.)
  std::string p = inner.empty() ? "." : inner;
  struct stat st {};
  while (::stat(p.c_str(), &st) != 0) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const std::size_t slash = p.rfind('/');
    if (slash == std::string::npos) {
      p.assign(1, '.');
    } else {
      p.resize(slash == 0 ? 1 : slash);  // "/x" -> "/", "a/b" -> "a"
    }
    if (p == "." && ::stat(p.c_str(), &st) != 0) return false;
  }
  for (int i = 0; i < kMaxParents; ++i) {
    if (file_id_of(st) == *target) return true;
    const std::string up = p + "/..";
    struct stat parent {};
    if (::stat(up.c_str(), &parent) != 0) return false;
    if (file_id_of(parent) == file_id_of(st)) return false;  // the root
    p = up;
    st = parent;
  }
  return false;
}

std::vector<FolderEntry> list_folder(const std::string& dir, std::string_view operation,
                                     std::string_view why_links) {
  check_path(dir, operation);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    struct stat st {};
    if (errno == ENOTDIR || (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))) {
      throw FileFormatError(dir, "is not a directory");
    }
    throw io_error(errno, operation, "cannot open the folder", dir);
  }
  std::vector<FolderEntry> out;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw io_error(err, operation, "cannot stat", dir);
  }
  out.push_back({"", st.st_mode, true});
  const std::string root =
      dir.size() > 1 && dir.back() == '/' ? dir.substr(0, dir.size() - 1) : dir;
  list_into(fd, root, "", 0, operation, why_links, out);
  std::sort(out.begin(), out.end(),
            [](const FolderEntry& a, const FolderEntry& b) { return a.relative < b.relative; });
  return out;
}

bool recording_reads() noexcept {
  return g_recording.load(std::memory_order_acquire);
}

void record_read(const struct stat& st, const std::string& path) {
  if (!recording_reads()) return;
  Record& r = record();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.files.emplace(std::pair{st.st_dev, st.st_ino}, path);
}

std::optional<std::string> read_as(FileId id) {
  if (!recording_reads()) return std::nullopt;
  Record& r = record();
  const std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.files.find({id.dev, id.ino});
  if (it == r.files.end()) return std::nullopt;
  return it->second;
}

void set_recording_reads(bool on) {
  Record& r = record();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.files.clear();
  g_recording.store(on, std::memory_order_release);
}

}  // namespace posemb::detail
