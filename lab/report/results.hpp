// lab/report/results.hpp: the experiment's outputs (the CLI writes them with
// posemb::write_file_atomically), and the statistics over seeds they are read with.
//
//   results.csv / results.json  accuracy by length for every run (results.json's schema is read
//                               by others: {"task", "train_len", "runs": [{"pe", "seed",
//                               "max_seq_len", "train_seconds", "results": [{"length", "status",
//                               "exact_match", "token_accuracy"}]}]}; "seed" is null when unknown)
//   extension.csv / .json       the table-extension experiment: exact match at the evaluated
//                               lengths after each number of fine-tuning steps, per method and seed
//   rope_extension.csv / .json  the same for a rotary run with each RoPE scaling method
//
//   lab::Spread s = lab::spread_of({0.97, 1.0, 0.99});   // mean 0.9867, min 0.97, max 1.0
//   auto m = lab::mean_exact_match(run, 1, 8);           // nullopt if a length is beyond_table
// (The demo's plots are drawn by the CLI with the renderer in viz/.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lab/eval/evaluate.hpp"

namespace posemb::lab {

struct RunResults {
  std::string pe;
  std::optional<std::uint64_t> seed;       // the run's training seed, if known
  std::optional<std::size_t> max_seq_len;  // rows of the learned table, if any
  double train_seconds = 0.0;
  std::vector<LengthResult> results;
};

// The columns a results file writes: each scoring its lengths were scored by, once, in Scoring's
// order (greedy alone when there are none), and the windows' columns (lab::window_columns) when
// a length was scored on the windows of a text.
struct ResultColumns {
  std::vector<Scoring> scorings;
  bool windows = false;
};
void add_columns(ResultColumns& into, const std::vector<LengthResult>& lengths);
ResultColumns columns_of(const std::vector<RunResults>& runs);

// The per-length CSV columns of a file with these columns: "status" and each scoring's columns
// (lab::score_columns): greedy "status,exact_match,token_accuracy", teacher-forced
// "status,loss,bits_per_token", both "status,exact_match,token_accuracy,loss,bits_per_token";
// then a text's windows "scored,dropped,sliding_stride,sliding_bits_per_token".
std::string length_csv_header(const ResultColumns& columns);
// One length's fields under that header (status ok or beyond_table; a value "%.6f" or a whole
// number, empty beyond the table and in the columns of another scoring): the one per-length
// writer of every results file (results.csv, extension.csv, the sweep's); its JSON twin is
// length_json (lab/report/results_json.hpp).
std::string length_csv_fields(const LengthResult& l, const ResultColumns& columns);

// The loss by position inside the windows of a length scored on the windows of a text, one row a
// bucket: "begin,end,count,bits_per_token" (the one bucket writer: buckets.csv of `posemb eval`
// and of the sweep).
inline constexpr const char* kBucketCsvHeader = "begin,end,count,bits_per_token";
std::vector<std::string> bucket_csv_rows(const LengthResult& l);
// buckets.csv of runs: "pe,seed,length," and the bucket rows of every length within the table.
std::string buckets_csv(const std::vector<RunResults>& runs);

std::string results_csv(const std::vector<RunResults>& runs);
// {"task", "train_len", ["corpus": {"name", "bytes", "sha256"} for a task with a corpus,]
// "runs": [...]}
std::string results_json(const TaskConfig& task, const std::vector<RunResults>& runs);

// Mean, minimum and maximum of some values (over seeds); count 0 (and zeros) for none.
struct Spread {
  double mean = 0.0, min = 0.0, max = 0.0;
  std::size_t count = 0;
};
Spread spread_of(const std::vector<double>& values);

// The mean exact match of a run over lengths lo..hi (inclusive); nullopt when one of them is
// beyond_table or was not evaluated.
std::optional<double> mean_exact_match(const RunResults& run, std::size_t lo, std::size_t hi);

// One length over several runs of an encoding (seeds): exact match and token accuracy spreads;
// beyond_table when it is beyond the table in any run (the spreads are then empty).
struct LengthSpread {
  std::size_t length = 0;
  bool beyond_table = false;
  Spread exact, token;
  Spread bits;  // bits per token (loss / ln 2) of teacher-forced lengths
};
// Every length of the first run, over every run (runs must have been evaluated on the same
// lengths; throws std::invalid_argument otherwise or when runs is empty).
std::vector<LengthSpread> spread_by_length(const std::vector<const RunResults*>& runs);

// One fine-tuning run of an extension experiment: a learned table extended by `method` (a resize
// method), or a rotary run with `method` (a RoPE scaling), then fine-tuned; `curve` holds the
// evaluation after each number of steps (0: before any update).
struct ExtensionRun {
  std::string method;
  std::uint64_t seed = 0;
  double factor = 0.0;      // a RoPE scaling's factor (the text demo's; 0: not recorded)
  std::size_t steps = 0;    // fine-tuning steps before `after` (the text demo's; 0: not recorded)
  double first_loss = 0.0;  // the loss of the first fine-tuning batch, before any update
  double train_seconds = 0.0;
  std::vector<std::pair<std::size_t, std::vector<LengthResult>>> curve;  // (step, results)
  std::vector<LengthResult> after;  // every length up to the extended one, after fine-tuning
};

// The mean exact match over lengths lo..hi of each point of a run's curve.
std::vector<double> curve_mean_exact(const ExtensionRun& run, std::size_t lo, std::size_t hi);

// method,seed,step,length, then length_csv_header's columns
std::string extension_csv(const std::vector<ExtensionRun>& runs);
// {"train_len", "extended_train_len", "table_rows", "runs": [{"method", "seed", "first_loss",
// "train_seconds", "curve": [{"step", "results": [...]}], "after": [...]}]}
std::string extension_json(std::size_t train_len, std::size_t extended_train_len,
                           std::size_t table_rows, const std::vector<ExtensionRun>& runs);
// The RoPE extension (a rotary run with each scaling method, method "none" first; its CSV is
// extension_csv's): {"train_len", "extended_train_len", "factor", "original_positions" (L0, the
// trained positions the scaling stretches), "runs": [as in extension.json]}
std::string rope_extension_json(std::size_t train_len, std::size_t extended_train_len,
                                double factor, std::size_t original_positions,
                                const std::vector<ExtensionRun>& runs);

}  // namespace posemb::lab
