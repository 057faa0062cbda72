// `posemb demo`: the core operation on a small table, until the experiment lands.
#include <fmt/core.h>

#include <cstddef>
#include <random>
#include <string>

#include "cli.hpp"
#include "posemb/posemb.hpp"

namespace posemb::cli {
namespace {

struct DemoOptions {
  std::size_t max_seq_len = 8;
  std::size_t embed_dim = 6;
  std::size_t seq_len = 0;  // 0: half the table
  std::uint64_t seed = 1;
};

void print_rows(const std::string& title, MatrixView<const float> m, std::size_t first_pos) {
  fmt::print("{}\n", title);
  for (std::size_t r = 0; r < m.rows(); ++r) {
    fmt::print("  pos {:>3} |", first_pos + r);
    for (float v : m.row(r)) fmt::print(" {:+.4f}", v);
    fmt::print("\n");
  }
}

void run_demo(const DemoOptions& o) {
  // A small "learned" table, initialized as GPT-2 does (normal, std 0.02), seeded.
  Matrix<float> table(o.max_seq_len, o.embed_dim);  // (max_seq_len, embed_dim)
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& v : table.flat()) v = normal(rng);

  fmt::print(
      "A learned position table: {} rows (max_seq_len) x {} columns (embed_dim), "
      "N(0, 0.02), seed {}.\n\n",
      table.rows(), table.cols(), o.seed);

  // The user's seq_len is looked up as given: past the table it throws, and main() reports it.
  const std::size_t n = o.seq_len != 0 ? o.seq_len : o.max_seq_len / 2;
  auto first = learned_positional_embedding(n, table);
  print_rows(fmt::format("learned_positional_embedding({}, table): rows [0, {}), zero-copy "
                         "(data() == table.data(): {})",
                         n, n, first.data() == table.data()),
             first, 0);

  const std::size_t start = o.max_seq_len - 3;
  auto cached = learned_positional_embedding(3, table, start);
  print_rows(fmt::format("\nlearned_positional_embedding(3, table, start = {}): rows [{}, {}) for "
                         "cached decoding",
                         start, start, start + 3),
             cached, start);

  auto sin = sinusoidal_positional_encoding(3, o.embed_dim, start);
  print_rows(fmt::format("\nsinusoidal_positional_encoding(3, {}, start = {}): the computed "
                         "counterpart",
                         o.embed_dim, start),
             sin, start);

  const std::size_t too_long = o.max_seq_len + 2;
  fmt::print("\nlearned_positional_embedding({}, table) on a {}-row table:\n", too_long,
             table.rows());
  try {
    (void)learned_positional_embedding(too_long, table);
    throw std::logic_error("demo: expected SequenceTooLong was not thrown");
  } catch (const SequenceTooLong& e) {
    fmt::print("  caught posemb::SequenceTooLong (seq_len {}, start {}, max_seq_len {}):\n  {}\n",
               e.seq_len(), e.start(), e.max_seq_len(), e.what());
  }

  auto beyond = sinusoidal_positional_encoding(2, o.embed_dim, o.max_seq_len);
  print_rows(fmt::format("\nThe sinusoidal encoding is a formula, so it has values at positions "
                         "{} and {} too\n(whether a model generalizes there is another "
                         "question: see docs/):",
                         o.max_seq_len, o.max_seq_len + 1),
             beyond, o.max_seq_len);
}

}  // namespace

void register_demo_command(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Show the core operation: rows of a small learned table looked up with and without "
      "an offset, the sinusoidal counterpart, and the error for a sequence that does not "
      "fit.");
  cmd->add_option("--max-seq-len", opts->max_seq_len, "Rows of the demo table")
      ->check(CLI::Range(std::size_t{4}, std::size_t{64}))
      ->capture_default_str();
  cmd->add_option("--embed-dim", opts->embed_dim, "Columns of the demo table")
      ->check(CLI::Range(std::size_t{1}, std::size_t{16}))
      ->capture_default_str();
  cmd->add_option("--seq-len", opts->seq_len,
                  "Positions to look up first (default: half the table; more than --max-seq-len "
                  "fails with the library's error)");
  cmd->add_option("--seed", opts->seed, "Seed of the table's initializer")->capture_default_str();
  cmd->callback([opts] { run_demo(*opts); });
}

}  // namespace posemb::cli
