// The one writer's folder mode (write_folder_atomically) and its guard of the files read
// (protect_read_files): what a folder write replaces and refuses, that a failure leaves the old
// folder and no temporary, paths inside the folder, signals; outputs compared with every file
// read, under every spelling of the same file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "file_test_util.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::message_of;
using test::temporaries;

namespace fs = std::filesystem;
using test::read_all;
using test::TempDir;
using test::write_all;

void two_files(FolderSink& out, const std::string& a, const std::string& b) {
  write_file_atomically(out.path("a.txt"), "test", a);
  write_file_atomically(out.path("sub/deeper/b.txt"), "test", b);
}

// Turns protect_read_files on for one test and off after it, whatever happens.
struct Protected {
  Protected() { protect_read_files(true); }
  ~Protected() { protect_read_files(false); }
};

TEST(AtomicFolder, WritesANewFolderWithSubfolders) {
  TempDir dir;
  write_folder_atomically(dir.file("out"), "test", false,
                          [](FolderSink& out) { two_files(out, "A", "B"); });
  EXPECT_EQ(read_all(dir.file("out/a.txt")), "A");
  EXPECT_EQ(read_all(dir.file("out/sub/deeper/b.txt")), "B");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});
}

TEST(AtomicFolder, AFailingFillLeavesTheOldFolderAndNoTemporary) {
  TempDir dir;
  write_folder_atomically(dir.file("out"), "test", false,
                          [](FolderSink& out) { two_files(out, "old A", "old B"); });
  EXPECT_THROW(write_folder_atomically(dir.file("out"), "test", true,
                                       [](FolderSink& out) {
                                         two_files(out, "new A", "new B");
                                         throw std::runtime_error("interrupted");
                                       }),
               std::runtime_error);
  EXPECT_EQ(read_all(dir.file("out/a.txt")), "old A");
  EXPECT_EQ(read_all(dir.file("out/sub/deeper/b.txt")), "old B");
  EXPECT_TRUE(temporaries(dir).empty());
  // Replaced whole when asked: the old folder's files are gone, no temporary is left.
  write_folder_atomically(dir.file("out"), "test", true, [](FolderSink& out) {
    write_file_atomically(out.path("c.txt"), "test", "C");
  });
  EXPECT_EQ(read_all(dir.file("out/c.txt")), "C");
  EXPECT_FALSE(fs::exists(dir.file("out/a.txt")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});
}

TEST(AtomicFolder, RefusesTargetsThatAreNotFoldersBeforeCreatingAnything) {
  TempDir dir;
  write_all(dir.file("file"), "a file");
  fs::create_directory(dir.file("full"));
  write_all(dir.file("full/keep.txt"), "keep");
  fs::create_directory(dir.file("real"));
  fs::create_directory_symlink(dir.file("real"), dir.file("link"));
  const auto refused = [&](const std::string& target, const std::string& expected) {
    bool filled = false;
    const std::string m = message_of<std::invalid_argument>([&] {
      write_folder_atomically(target, "test", false, [&](FolderSink&) { filled = true; });
    });
    EXPECT_NE(m.find(expected), std::string::npos) << target << ": " << m;
    EXPECT_FALSE(filled) << target;
    EXPECT_TRUE(temporaries(dir).empty()) << target;
  };
  refused(dir.file("file"), "exists and is not a directory");
  refused(dir.file("full"), "exists and is not empty");
  refused(dir.file("link"), "is a symbolic link");
  refused(".", "names the current folder");
  refused("..", "names the current folder, one above it");
  refused("../..", "names the current folder, one above it");
  refused("/", "or the root");
  refused(dir.file("full/.."), "exists and is not empty");  // the folder dir, spelled another way
  refused(std::string(dir.file("o")) + std::string("\0ut", 3), "NUL byte");
  refused("", "no output folder named");
  EXPECT_FALSE(fs::exists(dir.file("o")));
  EXPECT_EQ(read_all(dir.file("full/keep.txt")), "keep");
  EXPECT_EQ(read_all(dir.file("file")), "a file");
  // An empty folder is written over without being asked.
  fs::create_directory(dir.file("empty"));
  write_folder_atomically(dir.file("empty"), "test", false,
                          [](FolderSink& out) { two_files(out, "1", "2"); });
  EXPECT_EQ(read_all(dir.file("empty/a.txt")), "1");
}

TEST(AtomicFolder, PathsInsideTheFolderAreChecked) {
  TempDir dir;
  std::vector<std::string> messages;
  write_folder_atomically(dir.file("out"), "test", false, [&](FolderSink& out) {
    for (const std::string& rel :
         std::vector<std::string>{"", "/etc/passwd", "../escape", "a/../../escape", "a//b", "./a",
                                  "a/.", std::string("a\0b", 3)}) {
      messages.push_back(message_of<std::invalid_argument>([&] { (void)out.path(rel); }));
    }
    write_file_atomically(out.path("ok.txt"), "test", "ok");
  });
  for (const auto& m : messages) EXPECT_EQ(m.rfind("test: ", 0), 0u) << m;
  EXPECT_FALSE(fs::exists(dir.file("escape")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});
  EXPECT_EQ(fs::directory_iterator(dir.file("out")) == fs::directory_iterator(), false);
  EXPECT_EQ(read_all(dir.file("out/ok.txt")), "ok");
}

TEST(AtomicFolder, ModesAreSetThroughTheSink) {
  TempDir dir;
  write_folder_atomically(dir.file("out"), "test", false, [](FolderSink& out) {
    two_files(out, "A", "B");
    out.set_mode("a.txt", 0600 | S_ISUID);
    out.set_mode("sub", 0500);  // a folder keeps its owner's rwx
    out.set_mode("", 0750);
  });
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("out/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(dir.file("out/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(dir.file("out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST(AtomicFolder, RemovePartialFilesRemovesAFolderInProgress) {
  TempDir dir;
  std::size_t during = 0;
  EXPECT_ANY_THROW(write_folder_atomically(dir.file("out"), "test", false, [&](FolderSink& out) {
    two_files(out, "A", "B");
    remove_partial_files();
    during = temporaries(dir).size();
    write_file_atomically(out.path("c.txt"), "test", "C");  // the folder is gone: fails
  }));
  EXPECT_EQ(during, 0u);
  EXPECT_TRUE(dir.entries().empty());
}

// ---- outputs against every file read ----

TEST(ReadFiles, AFileReadIsNotReplacedUnderAnyName) {
  TempDir dir;
  const std::string table = dir.file("t.npy");
  write_npy(table, Tensor::from_bytes("", DType::F32, {1, 1},
                                      std::as_bytes(std::span<const float>(std::vector{1.0f}))));
  fs::create_directory(dir.file("d"));
  ASSERT_EQ(::link(table.c_str(), dir.file("d/hard.npy").c_str()), 0);
  const std::string before = read_all(table);
  const Protected on;
  (void)read_npy(table);
  for (const std::string& out :
       {table, dir.file("./t.npy"), dir.file("d/../t.npy"), dir.file("d/hard.npy")}) {
    const std::string m = message_of<std::invalid_argument>(
        [&] { write_file_atomically(out, "test", std::string("over it")); });
    EXPECT_NE(m.find("is the input file"), std::string::npos) << out << ": " << m;
    EXPECT_NE(m.find("t.npy"), std::string::npos) << m;
    EXPECT_THROW(refuse_overwriting_read_files(out, "test"), std::invalid_argument) << out;
  }
  // A folder that holds it, as a folder write's target or checked up front.
  EXPECT_THROW(refuse_overwriting_read_files(dir.file("d"), "test"), std::invalid_argument);
  const std::string m = message_of<std::invalid_argument>(
      [&] { write_folder_atomically(dir.file("d"), "test", true, [](FolderSink&) {}); });
  EXPECT_NE(m.find("holds the input file"), std::string::npos) << m;
  EXPECT_EQ(read_all(table), before);
  EXPECT_TRUE(fs::exists(dir.file("d/hard.npy")));
  // Another file is fine, and so is a file that does not exist.
  write_file_atomically(dir.file("other.npy"), "test", std::string("x"));
  refuse_overwriting_read_files(dir.file("missing/x"), "test");
}

TEST(ReadFiles, OffByDefaultAndForgottenWhenTurnedOff) {
  TempDir dir;
  const std::string path = dir.file("t.npy");
  const std::vector<float> one{1.0f};
  const auto write = [&] {
    write_npy(path, Tensor::from_bytes("", DType::F32, {1, 1},
                                       std::as_bytes(std::span<const float>(one))));
  };
  write();
  (void)read_npy(path);  // protection off: not recorded
  write();               // and written over freely
  {
    const Protected on;
    (void)read_npy(path);
    EXPECT_THROW(write(), std::invalid_argument);
  }
  write();  // off again: the record is forgotten
  EXPECT_NO_THROW((void)read_npy(path));
}

TEST(ReadFiles, EveryFileOfACheckpointFolderCounts) {
  TempDir dir;
  const fs::path m = dir.file("m");
  fs::create_directories(m);
  const std::vector<float> v(8, 0.5f);
  write_safetensors((m / "model.safetensors").string(),
                    {Tensor::from_bytes("wpe.weight", DType::F32, {4, 2},
                                        std::as_bytes(std::span<const float>(v)))});
  write_all((m / "config.json").string(), R"({"model_type": "gpt2", "n_positions": 4})");
  write_all((m / "tokenizer.json").string(), "{}");
  const Protected on;
  const CheckpointFolder f = read_checkpoint_folder(m.string());
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"}) {
    EXPECT_THROW(refuse_overwriting_read_files((m / name).string(), "test"), std::invalid_argument)
        << name;
  }
}

}  // namespace
}  // namespace posemb
