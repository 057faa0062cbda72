// A text corpus (lab/tasks/corpus.hpp).
#include "lab/tasks/corpus.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "lab/config.hpp"
#include "posemb/digest.hpp"
#include "posemb/errors.hpp"
#include "posemb/random.hpp"
#include "posemb/read_file.hpp"

namespace posemb::lab {
namespace {

// The high 64 bits of a * b (a uniform 64-bit draw times n: a uniform offset in [0, n)).
std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) noexcept {
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const std::uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
}

}  // namespace

std::string corpus_cache_dir() {
  for (const char* var : {"POSEMB_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    const std::string dir(v);
    if (std::string_view(var) == "POSEMB_CACHE_DIR") return dir;
    if (std::string_view(var) == "XDG_CACHE_HOME") return dir + "/posemb";
    return dir + "/.cache/posemb";
  }
  throw std::runtime_error(
      "text corpus: no cache folder for the default corpus: set POSEMB_CACHE_DIR (or HOME)");
}

std::string default_corpus_path() {
  return corpus_cache_dir() + "/corpora/" + std::string(kDefaultCorpusName);
}

namespace {
bool is_default_path(const std::string& path) {
  try {
    return path == default_corpus_path();
  } catch (const std::runtime_error&) {
    return false;  // no cache folder: no default corpus either
  }
}
}  // namespace

CorpusMissing::CorpusMissing(const std::string& path)
    : std::runtime_error("text corpus: the default corpus " + quote_untrusted(path, 4096) +
                         " is not installed: run '" + std::string(kCorpusSetupCommand) +
                         "' (or make demo) to install it, set POSEMB_CACHE_DIR to the cache "
                         "that holds it, or name another corpus file"),
      path_(path) {}

Corpus::Corpus(std::string name, std::string bytes)
    : bytes_(std::move(bytes)),
      identity_{std::move(name), bytes_.size(), sha256_hex(bytes_)},
      split_(corpus_split(bytes_.size())) {}

std::shared_ptr<const Corpus> Corpus::load(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file_bytes(path, "read_corpus");
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::no_such_file_or_directory && is_default_path(path)) {
      throw CorpusMissing(path);
    }
    throw;
  }
  if (bytes.empty()) {
    throw FileFormatError(path,
                          "empty (0 bytes): a text corpus needs bytes to train on and "
                          "its last 10% to validate on");
  }
  return std::shared_ptr<const Corpus>(
      new Corpus(std::filesystem::path(path).filename().string(), std::move(bytes)));
}

std::shared_ptr<const Corpus> Corpus::from_bytes(std::string name, std::string bytes) {
  if (bytes.empty()) {
    throw std::invalid_argument("text corpus " + quote_untrusted(name, 256) + ": empty (0 bytes)");
  }
  return std::shared_ptr<const Corpus>(new Corpus(std::move(name), std::move(bytes)));
}

std::span<const std::uint8_t> Corpus::bytes() const noexcept {
  return {reinterpret_cast<const std::uint8_t*>(bytes_.data()), bytes_.size()};
}

std::size_t Corpus::train_window(std::uint64_t seed, std::uint64_t step, std::uint64_t row,
                                 std::size_t tokens) const {
  if (tokens >= split_) {
    throw std::invalid_argument("Corpus::train_window: the training part of " + identity_.text() +
                                " (" + std::to_string(split_) + " bytes) holds no window of " +
                                std::to_string(tokens) + " + 1 bytes");
  }
  Rng rng(mix_seed(mix_seed(seed, step), row));
  return static_cast<std::size_t>(mul_high(rng.next(), split_ - tokens));
}

void Corpus::check_train_tokens(std::size_t tokens) const {
  if (tokens < split_) return;
  throw ConfigError({"task.train_len"},
                    "text corpus " + identity_.text() + " is too small: its training part (the " +
                        "first 90%, " + std::to_string(split_) +
                        " bytes) holds no training window of " + std::to_string(tokens) +
                        " tokens (" + std::to_string(tokens + 1) + " bytes with the last target)");
}

void Corpus::check_eval_tokens(std::size_t tokens, const char* field) const {
  const std::size_t validation = identity_.bytes - split_;
  if (tokens < validation) return;
  throw ConfigError({field}, "text corpus " + identity_.text() +
                                 " is too small: its validation text (the last 10%, " +
                                 std::to_string(validation) + " bytes) holds no window of " +
                                 std::to_string(tokens) + " tokens (" + std::to_string(tokens + 1) +
                                 " bytes with the last target)");
}

std::string corpus_path(const TaskConfig& cfg) {
  return cfg.corpus.empty() ? default_corpus_path() : cfg.corpus;
}

std::shared_ptr<const Corpus> corpus_of(const TaskConfig& cfg) {
  const std::string path = corpus_path(cfg);
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Corpus>> loaded;
  std::shared_ptr<const Corpus> c;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto& slot = loaded[path];
    if (!slot) slot = Corpus::load(path);  // a throw leaves the slot empty: tried again next time
    c = slot;
  }
  // The same text (bytes and digest); the file may have been renamed or moved since.
  const CorpusIdentity& want = cfg.corpus_identity;
  if (!want.empty() && (c->identity().bytes != want.bytes || c->identity().sha256 != want.sha256)) {
    throw ConfigError({"task.corpus"},
                      "text corpus " + quote_untrusted(path, 4096) + ", " + c->identity().text() +
                          ", is not the corpus of this run, " + cfg.corpus_identity.text());
  }
  return c;
}

}  // namespace posemb::lab
