// The one writer (posemb/atomic_file.hpp): what it replaces and refuses, temporaries that never
// survive a failure, modes, long names, the registry behind remove_partial_files().
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "file_test_util.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::message_of;
using test::temporaries;

using test::TempDir;
namespace fs = std::filesystem;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(AtomicWrite, FailureInTheMiddleLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  write_file_atomically(path, "test", "old content");
  EXPECT_THROW(write_file_atomically(path, "test",
                                     [](FileSink& s) {
                                       const std::string half(5000, 'x');
                                       s.write(half.data(), half.size());
                                       s.flush();
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  EXPECT_EQ(test::read_all(path), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(AtomicWrite, RenameFailureLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("target.npy");
  // The target becomes a non-empty directory while the data is written: the rename fails.
  const std::string msg = message_of<std::system_error>([&] {
    write_file_atomically(path, "test", [&](FileSink& s) {
      s.write("data", 4);
      fs::create_directories(fs::path(path) / "inside");
    });
  });
  EXPECT_NE(msg.find("target.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rename"), std::string::npos) << msg;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target.npy"});
  EXPECT_TRUE(fs::is_directory(fs::path(path) / "inside"));
}

TEST(AtomicWrite, ReplacesAnExistingFileWhole) {
  TempDir dir;
  const std::string path = dir.file("t.npy");
  write_npy(path, test::random_tensor<float>("", {1000}, 1));
  write_npy(path, test::random_tensor<float>("", {2}, 2));
  EXPECT_EQ(read_npy(path).shape(), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.npy"});
  const std::string msg = message_of<std::system_error>(
      [&] { write_npy(dir.file("no/such/dir/t.npy"), test::random_tensor<float>("", {2}, 2)); });
  EXPECT_NE(msg.find("write_npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

// A 250-character name is valid (NAME_MAX is 255): the temporary's name does not grow with it.
TEST(AtomicWrite, LongNamesWorkAndTemporariesHaveShortNames) {
  TempDir dir;
  const std::string path = dir.file(std::string(250, 'n'));
  std::vector<std::string> seen;
  write_file_atomically(path, "test", [&](FileSink& s) {
    seen = temporaries(dir);
    s.write("x", 1);
  });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].size(), 18u) << seen[0];
  EXPECT_EQ(test::read_all(path), "x");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{std::string(250, 'n')});
}

// Outputs replace only a regular file or a missing path.
TEST(AtomicWrite, RefusesEverythingButRegularFilesBeforeCreatingAnything) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  fs::create_directory(dir.file("subdir"));
  test::write_all(dir.file("victim"), "victim");
  fs::create_symlink("victim", dir.file("link"));
  fs::create_symlink("absent", dir.file("dangling"));
  fs::create_symlink("/dev/null", dir.file("devnull"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/null", "a character device"},
      {"/dev/full", "a character device"},
      {"/dev/stdout", "a symbolic link"},
      {dir.file("fifo"), "a FIFO"},
      {dir.file("subdir"), "a directory"},
      {dir.file("link"), "a symbolic link"},
      {dir.file("dangling"), "a symbolic link"},
      {dir.file("devnull"), "a symbolic link"},
      {dir.file("subdir") + "/", "names a directory"}};
  const auto before = dir.entries();
  for (const auto& [path, phrase] : cases) {
    bool called = false;
    const std::string msg = message_of<std::invalid_argument>(
        [&] { write_file_atomically(path, "test", [&](FileSink&) { called = true; }); });
    EXPECT_NE(msg.find(phrase), std::string::npos) << path << ": " << msg;
    EXPECT_NE(msg.find("test: cannot write"), std::string::npos) << msg;
    EXPECT_FALSE(called) << path;
  }
  EXPECT_EQ(dir.entries(), before);
  EXPECT_EQ(test::read_all(dir.file("victim")), "victim");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_TRUE(fs::is_fifo(dir.file("fifo")));
  // The same through the format writers.
  EXPECT_THROW(write_npy("/dev/full", test::random_tensor<float>("", {2}, 1)),
               std::invalid_argument);
  EXPECT_THROW(write_safetensors(dir.file("link"), {test::random_tensor<float>("a", {2}, 1)}),
               std::invalid_argument);
  EXPECT_EQ(test::read_all(dir.file("victim")), "victim");
}

// A new file gets 0666 & ~umask; a replaced file keeps its mode.
TEST(AtomicWrite, ModesFollowTheUmaskAndAreKeptOnReplace) {
  TempDir dir;
  const mode_t saved = ::umask(022);
  for (const mode_t mask : {mode_t{022}, mode_t{077}, mode_t{0}, mode_t{027}}) {
    ::umask(mask);
    const std::string path = dir.file("new" + std::to_string(mask));
    write_file_atomically(path, "test", "x");
    EXPECT_EQ(mode_of(path), 0666 & ~mask) << std::oct << mask;
  }
  ::umask(022);
  for (const mode_t keep : {mode_t{0600}, mode_t{0640}, mode_t{0755}, mode_t{0444}}) {
    const std::string path = dir.file("old" + std::to_string(keep));
    write_file_atomically(path, "test", "old");
    ASSERT_EQ(::chmod(path.c_str(), keep), 0);
    mode_t during = 0;
    write_file_atomically(path, "test", [&](FileSink& s) {
      during = mode_of(dir.file(temporaries(dir).at(0)));
      s.write("new", 3);
    });
    EXPECT_EQ(during, 0600u) << "a replacement's temporary is private until written";
    EXPECT_EQ(mode_of(path), keep) << std::oct << keep;
    EXPECT_EQ(test::read_all(path), "new");
  }
  ::umask(saved);
}

// A write that fails part-way through (the file-size limit: EFBIG with SIGXFSZ ignored, as a
// full disk would give ENOSPC) leaves the old file and no temporary, and says why.
TEST(AtomicWrite, AWriteFailingPartWayLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  write_safetensors(path, {test::random_tensor<float>("a", {16}, 1)});
  const std::string before = test::read_all(path);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1 << 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    write_safetensors(path, {test::random_tensor<float>("a", {1 << 20}, 2)});  // 4 MiB
  } catch (const std::system_error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find("write_safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(test::read_all(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"big.safetensors"});
}

// remove_partial_files() (what a SIGINT / SIGTERM handler calls) removes the temporary of a
// write in progress; that write then fails and the old file stays.
TEST(AtomicWrite, RemovePartialFilesRemovesTemporariesInProgress) {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomically(path, "test", "old");
  std::size_t during = 0;
  EXPECT_THROW(write_file_atomically(path, "test",
                                     [&](FileSink& s) {
                                       s.write("partial", 7);
                                       s.flush();
                                       remove_partial_files();
                                       during = temporaries(dir).size();
                                     }),
               std::system_error);
  EXPECT_EQ(during, 0u);
  EXPECT_EQ(test::read_all(path), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
  // Nothing in progress: nothing removed.
  remove_partial_files();
  EXPECT_EQ(test::read_all(path), "old");
}

}  // namespace
}  // namespace posemb
