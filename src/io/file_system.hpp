// src/io/file_system.hpp (internal): the one place where a path posemb was given meets the file
// system. Every function here that takes a path checks it first (check_path: no NUL byte), and
// the rest of the library reaches the file system only through these functions, the reader
// (mapped_file.hpp) and the writer (posemb/atomic_file.hpp), which do the same
// (tests/io/check_file_access.py fails the build's tests when a source file calls the file
// system directly).
//
// It also keeps the record of the files read while protect_read_files(true) is in effect
// (posemb/atomic_file.hpp): the reader and the folder listing record what they open, the writers
// refuse to replace it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace posemb::detail {

// Throws std::invalid_argument naming `operation` when path holds a NUL byte: the system calls
// would read the path only up to it ("a.safetensors\0.txt" would be "a.safetensors", "o\0ut"
// would be "o").
void check_path(const std::string& path, std::string_view operation);

// What a file of this st_mode is, for messages: "a directory", "a FIFO", ...
const char* file_type(mode_t mode);

// A file's identity: the same file under any name (hard and symbolic links, ./x, d/../x, a bind
// mount) has the same one.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};
inline FileId file_id_of(const struct stat& st) noexcept {
  return {st.st_dev, st.st_ino};
}

// The identity of what path names (symbolic links followed); nullopt when nothing is there (or
// it cannot be stat'ed).
std::optional<FileId> file_id(const std::string& path, std::string_view operation);

// True when `inner` is the folder `outer` or inside it, whatever their spelling: inner (or, when
// it does not exist yet, its nearest existing parent) and every folder above it, up to the root,
// are compared with outer by identity. False when outer does not exist.
bool same_or_inside(const std::string& inner, const std::string& outer, std::string_view operation);

// One entry of a folder's listing.
struct FolderEntry {
  std::string relative;  // "config.json", "tokenizer/vocab.txt" ('/'-separated, in the folder)
  mode_t mode = 0;       // st_mode
  bool folder = false;   // a subfolder (listed before what it holds)
};

// The folder itself (relative "", first), then every regular file and subfolder under dir
// (relative paths, sorted), read without following
// symbolic links: a symbolic link or a special file anywhere is refused with FileFormatError
// naming it (`why_links` says what to do instead), as is a folder nested more than 64 deep or
// holding more than 1,000,000 entries. The files are recorded as read (protect_read_files).
// Throws FileFormatError when dir is not a directory, std::system_error when it cannot be read.
std::vector<FolderEntry> list_folder(const std::string& dir, std::string_view operation,
                                     std::string_view why_links);

// ---- the record of files read (protect_read_files) ----

// Whether files read are being recorded.
bool recording_reads() noexcept;
// Records the file of st, opened as path, when recording.
void record_read(const struct stat& st, const std::string& path);
// The path a recorded file was read as, or nullopt when id was not read.
std::optional<std::string> read_as(FileId id);
// Starts (clearing the record) or stops (forgetting it) recording.
void set_recording_reads(bool on);

}  // namespace posemb::detail
