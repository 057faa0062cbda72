// posemb/read_file.hpp: a whole file's bytes in memory, read the way posemb reads every file
// (opened once without blocking, regular files only; the tensor readers share the same steps).
//
//   std::string text = posemb::read_file_bytes("corpus.txt", "read_corpus");
//   posemb::sha256_hex(text);   // posemb/digest.hpp: the digest sha256sum prints for the file
//
// For data read whole and kept (a training corpus): the bytes are a private copy, so changing or
// truncating the file afterwards changes nothing already read.
#pragma once

#include <string>
#include <string_view>

namespace posemb {

// The bytes of the regular file at path (an empty file gives ""). `operation` names the caller
// in messages. Refused before anything is read, each in one line:
//  - a path holding a NUL byte: std::invalid_argument;
//  - a path that cannot be opened or stat'ed (missing, no permission): std::system_error naming
//    the operation, the path and the reason;
//  - a directory, FIFO, device or socket: FileFormatError "'PATH': not a regular file (a FIFO);
//    OPERATION reads regular files only"; opening never blocks (O_NONBLOCK), so a FIFO without
//    a writer is refused at once rather than waited on;
//  - a file that says 0 bytes and yet holds data (/proc, /sys): FileFormatError;
//  - a file larger than the memory budget (posemb/memory.hpp): MemoryLimitExceeded naming the
//    bytes and the limit, before any allocation.
// A file that shrinks while it is read: FileFormatError naming both sizes. Bytes appended while
// it is read are not read (its size is taken once, when it is opened).
std::string read_file_bytes(const std::string& path, std::string_view operation);

}  // namespace posemb
