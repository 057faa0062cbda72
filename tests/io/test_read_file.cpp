// A whole file's bytes (posemb/read_file.hpp): the bytes as written, and every refusal in one
// line naming what was wrong, without blocking and before allocating.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/random.hpp"
#include "posemb/read_file.hpp"
#include "temp_dir.hpp"

namespace posemb {
namespace {

using test::TempDir;

std::string write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Every byte value, and sizes on both sides of the 1 MiB where the tensor readers switch from
// reading to mapping.
TEST(ReadFileBytes, GivesTheBytesAsWritten) {
  TempDir dir;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{256}, std::size_t{1} << 20,
                        (std::size_t{1} << 20) + 1, std::size_t{3'000'001}}) {
    std::string bytes(n, '\0');
    Rng rng(n);
    for (auto& c : bytes) c = static_cast<char>(rng.next());
    const std::string path = write(dir, std::string("f").append(std::to_string(n)), bytes);
    EXPECT_EQ(read_file_bytes(path, "test"), bytes) << n << " bytes";
  }
}

// Opening a FIFO would wait for a writer: refused at once (a hang ends the test by SIGALRM).
TEST(ReadFileBytes, SpecialFilesAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);
  for (const auto& [path, type] :
       {std::pair{fifo, "a FIFO"}, std::pair{std::string("/dev/null"), "a character device"},
        std::pair{dir.path().string(), "a directory"}}) {
    try {
      (void)read_file_bytes(path, "read_corpus");
      ADD_FAILURE() << path << " read";
    } catch (const FileFormatError& e) {
      EXPECT_EQ(e.problem(), std::string("not a regular file (") + type +
                                 "); read_corpus reads regular files only");
      EXPECT_EQ(e.path(), path);
    }
  }
  alarm(0);
}

TEST(ReadFileBytes, MissingFilesAndBadPathsAreRefused) {
  TempDir dir;
  try {
    (void)read_file_bytes(dir.file("missing.txt"), "read_corpus");
    ADD_FAILURE() << "a missing file was read";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    const std::string what = e.what();
    EXPECT_NE(what.find("read_corpus: cannot open '" + dir.file("missing.txt") + "'"),
              std::string::npos)
        << what;
  }
  EXPECT_THROW((void)read_file_bytes(std::string("a\0b", 3), "read_corpus"), std::invalid_argument);
  // /proc files say 0 bytes and hold text: their size is unknown, so they are refused.
  EXPECT_THROW((void)read_file_bytes("/proc/self/status", "read_corpus"), FileFormatError);
}

// Larger than the memory budget: refused with both numbers before anything is allocated.
TEST(ReadFileBytes, FilesOverTheMemoryBudgetAreRefused) {
  TempDir dir;
  const std::string path = write(dir, "big", std::string(100'000, 'x'));
  set_memory_limit(50'000);
  try {
    (void)read_file_bytes(path, "read_corpus");
    ADD_FAILURE() << "read over the budget";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.bytes(), 100'000u);
    EXPECT_EQ(e.limit(), 50'000u);
  }
  set_memory_limit(0);
  EXPECT_EQ(read_file_bytes(path, "read_corpus").size(), 100'000u);
}

}  // namespace
}  // namespace posemb
