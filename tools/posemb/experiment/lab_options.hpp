// tools/posemb/lab_options.hpp: the model, task and optimizer flags shared by `posemb train` and
// `posemb demo`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "lab/trainer.hpp"

namespace posemb::cli {

struct LabFlags {
  LabFlags() { run.model.embed_init_std = 0.0; }  // 0: the encoding's default
  lab::RunConfig run;
  std::string pe = "learned";
  std::string task = "copy";
  std::size_t max_seq_len = 0;  // 0: the default for the encoding
  std::size_t d_ff = 0;         // 0: 4 * d_model
  int threads = 0;              // 0: OpenMP's default
};

// Adds the flags to cmd (all optional, with defaults shown in --help).
void add_lab_flags(CLI::App* cmd, LabFlags& f);
// Turns the parsed flags into a RunConfig; throws UsageError for contradicting values.
lab::RunConfig finish_lab_flags(LabFlags& f);
// The default table size for an encoding: learned = the longest training sequence; the
// randomized table is max(256, 4x) that (Ruoss et al. use a table much longer than training).
std::size_t default_table_rows(lab::PeKind pe, std::size_t train_len);
// The token embedding's default init std: 1 for sinusoidal (its entries are unit-sized, as in
// Vaswani et al., who scale embeddings by sqrt(d_model)); GPT-2's 0.02 for the others.
double default_embed_init_std(lab::PeKind pe);
// Sets the OpenMP thread count (0: leave the default).
void set_threads(int threads);

}  // namespace posemb::cli
