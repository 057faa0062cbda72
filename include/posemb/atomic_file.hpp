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

// Unlinks the temporary file of every write_file_atomically in progress in this process (the
// writes then fail), and removes the temporary folder of every write_checkpoint_folder in
// progress with what is in it. Async-signal-safe: only atomics and system calls (openat,
// getdents64, unlinkat, close).
void remove_partial_files() noexcept;

}  // namespace posemb
