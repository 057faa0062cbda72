// The text corpus (lab/tasks/corpus.hpp): its identity against sha256sum, the split, the seeded
// training windows, and every refusal in one line naming the numbers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <system_error>

#include "lab/config.hpp"
#include "lab/tasks/corpus.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/random.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

using test::TempDir;

std::string write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string random_text(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng.next());
  return s;
}

// What sha256sum prints for the file.
std::string sha256sum(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  if (p == nullptr) return "";
  char line[256] = {};
  const bool got = std::fgets(line, sizeof line, p) != nullptr;
  ::pclose(p);
  return got ? std::string(line, 64) : "";
}

// An environment variable set for one scope, restored after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Corpus, IdentityIsTheFileNameSizeAndSha256sum) {
  TempDir dir;
  for (std::size_t n : {1, 9, 10, 11, 63, 64, 65, 1000, 100'003}) {
    const std::string path = write(dir, "text-" + std::to_string(n) + ".txt", random_text(n, n));
    const auto c = Corpus::load(path);
    EXPECT_EQ(c->identity().name, "text-" + std::to_string(n) + ".txt");
    EXPECT_EQ(c->identity().bytes, n);
    EXPECT_EQ(c->identity().sha256, sha256sum(path)) << n << " bytes";
    EXPECT_EQ(c->identity().text(), "'text-" + std::to_string(n) + ".txt' (" + std::to_string(n) +
                                        " bytes, sha256 " + c->identity().sha256.substr(0, 16) +
                                        "...)");
  }
}

// The validation text is the last ceil(bytes / 10) bytes: split = floor(9 bytes / 10), exactly,
// and never trained on.
TEST(Corpus, SplitIsFloorOfNineTenths) {
  for (std::size_t n = 1; n <= 1000; ++n) {
    EXPECT_EQ(corpus_split(n), (9 * n) / 10) << n;
    EXPECT_EQ(n - corpus_split(n), (n + 9) / 10) << n;  // ceil(n / 10) validation bytes
  }
  // No overflow where 9 * n would wrap: floor(9 n / 10) from 128-bit arithmetic.
  __extension__ using u128 = unsigned __int128;
  for (std::size_t n : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 9 + 1, std::size_t{1} << 62}) {
    EXPECT_EQ(corpus_split(n), static_cast<std::size_t>(u128{n} * 9 / 10)) << n;
  }
  const std::string text = random_text(1234, 7);
  const auto c = Corpus::from_bytes("t", text);
  EXPECT_EQ(c->split(), 1110u);
  EXPECT_EQ(c->train().size(), 1110u);
  EXPECT_EQ(c->validation().size(), 124u);
  EXPECT_EQ(c->train().data(), c->bytes().data());
  EXPECT_EQ(c->validation().data(), c->bytes().data() + 1110);
  EXPECT_TRUE(std::equal(c->bytes().begin(), c->bytes().end(),
                         reinterpret_cast<const std::uint8_t*>(text.data())));
}

// A function of (seed, step, row) alone, inside the training part with its last target, and
// spread over all of it.
TEST(Corpus, TrainingWindowsAreSeededAndInsideTheTrainingPart) {
  const auto c = Corpus::from_bytes("t", random_text(10'000, 3));  // split 9000
  const std::size_t T = 64;
  __extension__ using u128 = unsigned __int128;
  std::size_t lowest = SIZE_MAX, highest = 0;
  std::set<std::size_t> seen;
  for (std::uint64_t step = 0; step < 200; ++step) {
    for (std::uint64_t row = 0; row < 32; ++row) {
      const std::size_t o = c->train_window(5, step, row, T);
      // The rule of the header, computed here with 128-bit arithmetic.
      Rng rng(mix_seed(mix_seed(5, step), row));
      EXPECT_EQ(o, static_cast<std::size_t>((u128{rng.next()} * (9000 - T)) >> 64));
      ASSERT_LE(o + T + 1, c->split()) << "a window reads past the training part";
      EXPECT_EQ(c->train_window(5, step, row, T), o);  // the same again
      lowest = std::min(lowest, o);
      highest = std::max(highest, o);
      seen.insert(o);
    }
  }
  EXPECT_LT(lowest, 100u);
  EXPECT_GT(highest, 9000u - T - 1 - 100);
  EXPECT_GT(seen.size(), 4000u);  // 6400 draws over 8936 offsets
  EXPECT_NE(c->train_window(5, 0, 0, T), c->train_window(6, 0, 0, T));
  EXPECT_NE(c->train_window(5, 0, 0, T), c->train_window(5, 1, 0, T));
  // The largest window that fits: offset 0 is the only start.
  EXPECT_EQ(c->train_window(5, 0, 0, 8999), 0u);
  EXPECT_THROW((void)c->train_window(5, 0, 0, 9000), std::invalid_argument);
}

TEST(Corpus, SettingsTheCorpusIsTooSmallForAreRefusedWithTheNumbers) {
  const auto c = Corpus::from_bytes("small.txt", std::string(1000, 'a'));  // 900 + 100
  c->check_train_tokens(899);
  c->check_eval_tokens(99, "eval.lengths");
  try {
    c->check_train_tokens(900);
    ADD_FAILURE() << "a window of 901 bytes in 900";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"task.train_len"});
    EXPECT_EQ(std::string(e.what()),
              "text corpus 'small.txt' (1000 bytes, sha256 " + c->identity().sha256.substr(0, 16) +
                  "...) is too small: its training part (the first 90%, 900 bytes) holds no "
                  "training window of 900 tokens (901 bytes with the last target)");
  }
  try {
    c->check_eval_tokens(100, "eval.lengths");
    ADD_FAILURE() << "a window of 101 bytes in 100";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"eval.lengths"});
    EXPECT_NE(std::string(e.what()).find("validation text (the last 10%, 100 bytes) holds no "
                                         "window of 100 tokens (101 bytes"),
              std::string::npos)
        << e.what();
  }
}

TEST(Corpus, BadFilesAreRefusedInOneLine) {
  TempDir dir;
  const auto one_line = [](const std::exception& e) {
    return std::string(e.what()).find('\n') == std::string::npos;
  };
  // Empty.
  const std::string empty = write(dir, "empty.txt", "");
  try {
    (void)Corpus::load(empty);
    ADD_FAILURE() << "an empty corpus was loaded";
  } catch (const FileFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("empty (0 bytes)"), std::string::npos) << e.what();
    EXPECT_TRUE(one_line(e));
  }
  EXPECT_THROW((void)Corpus::from_bytes("x", ""), std::invalid_argument);
  // A directory, a FIFO (refused without waiting for a writer), a device.
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);
  for (const auto& [path, type] :
       {std::pair{dir.path().string(), "a directory"}, std::pair{fifo, "a FIFO"},
        std::pair{std::string("/dev/zero"), "a character device"}}) {
    try {
      (void)Corpus::load(path);
      ADD_FAILURE() << path << " was loaded";
    } catch (const FileFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("not a regular file (") + type + ")"),
                std::string::npos)
          << e.what();
      EXPECT_TRUE(one_line(e));
    }
  }
  alarm(0);
  // Missing.
  try {
    (void)Corpus::load(dir.file("missing.txt"));
    ADD_FAILURE() << "a missing file was loaded";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos);
  }
  // Larger than the memory budget: refused before it is read.
  const std::string big = write(dir, "big.txt", std::string(200'000, 'b'));
  set_memory_limit(100'000);
  try {
    (void)Corpus::load(big);
    ADD_FAILURE() << "a corpus over the budget was loaded";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.bytes(), 200'000u);
    EXPECT_EQ(e.limit(), 100'000u);
  }
  set_memory_limit(0);
}

TEST(Corpus, TheDefaultCorpusIsFoundInTheCacheOrNamedMissing) {
  TempDir dir;
  {
    const ScopedEnv cache("POSEMB_CACHE_DIR", dir.path().c_str());
    EXPECT_EQ(corpus_cache_dir(), dir.path().string());
    EXPECT_EQ(default_corpus_path(), dir.path().string() + "/corpora/moby-dick.txt");
    try {
      (void)Corpus::load(default_corpus_path());
      ADD_FAILURE() << "a missing default corpus was loaded";
    } catch (const CorpusMissing& e) {
      EXPECT_EQ(e.path(), default_corpus_path());
      const std::string what = e.what();
      EXPECT_NE(what.find("bash scripts/setup.sh corpus"), std::string::npos) << what;
      EXPECT_NE(what.find(default_corpus_path()), std::string::npos) << what;
    }
  }
  {
    const ScopedEnv cache("POSEMB_CACHE_DIR", nullptr);
    const ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
    EXPECT_EQ(corpus_cache_dir(), "/x/cache/posemb");
    const ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    const ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(corpus_cache_dir(), "/home/u/.cache/posemb");
    const ScopedEnv no_home("HOME", nullptr);
    EXPECT_THROW((void)corpus_cache_dir(), std::runtime_error);
  }
}

// The default corpus as installed by the setup script (installed here if missing): the size and
// digest the docs give.
TEST(Corpus, TheInstalledDefaultCorpusIsThePinnedBook) {
  if (!std::filesystem::exists(default_corpus_path())) {
    const std::string cmd = std::string("bash ") + POSEMB_TESTS_DIR + "/../scripts/setup.sh corpus";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  const auto c = Corpus::load(default_corpus_path());
  EXPECT_EQ(c->identity().name, kDefaultCorpusName);
  EXPECT_EQ(c->identity().bytes, kDefaultCorpusBytes);
  EXPECT_EQ(c->identity().sha256, kDefaultCorpusSha256);
  EXPECT_EQ(c->identity().sha256, sha256sum(default_corpus_path()));
  const std::string head(reinterpret_cast<const char*>(c->bytes().data()), 10);
  EXPECT_EQ(head, "ETYMOLOGY.");
}

}  // namespace
}  // namespace posemb::lab
