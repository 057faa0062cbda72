// posemb/atomic_file.hpp: the one way posemb writes a file: atomically, so that a reader sees
// either the old file or the whole new one, never a partial one.
//
//   posemb::write_file_atomically("out/results.csv", "eval", [&](posemb::FileSink& sink) {
//     sink.write(text.data(), text.size());
//   });
//   posemb::write_file_atomically("out/plot.png", "demo", png_bytes);   // bytes in memory
//
//   // In a program's SIGINT / SIGTERM handler (posemb installs none itself):
//   posemb::remove_partial_files();   // async-signal-safe
//
// How: the target must be a regular file or a missing path; anything else (a directory,
// /dev/null, /dev/full, a FIFO, a symbolic link, hence /dev/stdout) is refused with
// std::invalid_argument before anything is created. `fill` writes into a new temporary file
// ".posemb-XXXXXXXXXX" (18 characters, whatever the target's name) created exclusively
// (O_EXCL | O_NOFOLLOW) in the target's directory; the temporary is flushed, fsynced and renamed
// over the target, then the directory is fsynced (best effort: a failure there is ignored, the
// file being complete). If fill throws or any step fails, the temporary is removed, the target
// is left as it was, and the exception propagates (I/O failures as std::system_error whose
// message names the operation, the path, the step and the reason).
//
// Modes: a new file gets 0666 & ~umask (as the shell's `>` would); a replaced file keeps its
// permission bits (0777 & its mode; set-user-ID and set-group-ID bits are not carried over).
// Until its data is written, a replacement's temporary is 0600.
//
// Symbolic links are refused, whatever they point to: replacing the link would silently turn
// it into a file (for /dev/stdout redirected to a file, in /dev), and writing through it would
// write outside the target's directory. Write to the file the link points to instead. Nothing
// is ever written outside the target's directory.
//
// Signals: while a temporary exists it is recorded in a fixed, lock-free registry (up to 64
// writes at once). remove_partial_files() unlinks every recorded temporary and is
// async-signal-safe, so a program's handler can call it before re-raising the signal.
//
// Folders: write_folder_atomically writes a whole folder the same way (a checkpoint folder:
// config.json beside its shards): its files go into a temporary folder beside the target, which
// takes the target's name in one rename when they are all written.
//
//   posemb::write_folder_atomically("gpt2-2k", "resize", false, [&](posemb::FolderSink& out) {
//     posemb::write_file_atomically(out.path("config.json"), "resize", config_text);
//     posemb::write_safetensors(out.path("model.safetensors"), tensors, metadata);
//   });
//
// Files read: a program that must never write over what it read (the posemb tool does, for
// each command that reads files) calls protect_read_files(true) first. From then on every file
// posemb's readers open (tensor files, configs, the shards, index and other files of a checkpoint
// folder) is recorded by its identity, and the writers refuse a target that is one of them under
// any name (a hard or symbolic link, ./x, d/../x) or a folder that holds one, with
// std::invalid_argument: "... is the input file '...'". Off by default: a library caller may
// rewrite what it read.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace posemb {

// Buffered output to the temporary file of write_file_atomically; write() and flush() throw
// std::system_error naming the operation, the target and the reason on failure.
class FileSink {
 public:
  // fd: an open descriptor; what: "OPERATION: cannot write 'PATH'", the start of messages.
  FileSink(int fd, std::string what);
  void write(const void* data, std::size_t n);
  void flush();

 private:
  static constexpr std::size_t kBuf = 1 << 20;
  int fd_;
  std::string what_;
  std::vector<char> buf_;
};

// Writes path atomically with the content `fill` writes into the sink. `operation` names the
// caller in error messages ("write_safetensors", "posemb eval").
void write_file_atomically(const std::string& path, std::string_view operation,
                           const std::function<void(FileSink&)>& fill);

// The same for content already in memory.
void write_file_atomically(const std::string& path, std::string_view operation,
                           std::string_view bytes);

// The folder being written by write_folder_atomically: where its files go.
class FolderSink {
 public:
  // The path at which to write the file `relative` of the folder ("config.json",
  // "tokenizer/vocab.txt"), its parent folders made: give it to write_file_atomically or any
  // posemb writer. Throws std::invalid_argument for a path that is empty, absolute, or has a
  // NUL byte, an empty, "." or ".." component.
  std::string path(std::string_view relative);
  // Gives the file or folder `relative` ("" for the folder itself) the permission bits mode &
  // 0777 (07777 without set-user-ID and set-group-ID; a folder keeps its owner's rwx, which the
  // writer needs). Throws std::system_error naming it on failure.
  void set_mode(std::string_view relative, unsigned mode);

 private:
  friend void write_folder_atomically(const std::string&, std::string_view, bool,
                                      const std::function<void(FolderSink&)>&);
  FolderSink(std::string root, std::string operation);
  std::string root_;  // the temporary folder
  std::string operation_;
};

// Writes the folder `dir` atomically: `fill` writes its files through the sink into a new
// temporary folder ".posemb-XXXXXXXXXX" beside dir, which then takes dir's name in one rename.
// dir may be missing or an empty folder; a folder with files in it is replaced whole only when
// `replace` (then swapped in one step where the file system can, RENAME_EXCHANGE). A reader
// sees the old folder or the whole new one. Refused with std::invalid_argument before anything
// is created: a path with a NUL byte, a target that is not a folder (a file, a symbolic link, a
// special file), ".", "..", a non-empty folder without `replace`, a folder that holds a file read
// under protect_read_files. If fill throws or any step fails, the temporary folder is removed,
// dir is left as it was, and the exception propagates. While it is filled the temporary folder
// is recorded for remove_partial_files() (up to 8 at once).
void write_folder_atomically(const std::string& dir, std::string_view operation, bool replace,
                             const std::function<void(FolderSink&)>& fill);

// Unlinks the temporary file of every write_file_atomically in progress in this process (the
// writes then fail), and removes the temporary folder of every write_folder_atomically in
// progress with what is in it. Async-signal-safe: only atomics and system calls (openat,
// getdents64, unlinkat, close).
void remove_partial_files() noexcept;

// Starts (on: with an empty record) or stops (off: forgetting it) recording the files posemb
// reads, which the writers then refuse to replace (see above). Process-wide.
void protect_read_files(bool on);

// Throws std::invalid_argument naming `operation` when path is a file recorded as read (under
// any name), or a folder that holds one: a program's check of its outputs before it works (the
// writers make the same check when they write). Nothing is refused when protect_read_files is
// off, or when path does not exist.
void refuse_overwriting_read_files(const std::string& path, std::string_view operation);

}  // namespace posemb
