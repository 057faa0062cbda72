// tests/support/lab_runs.hpp: the small lab runs the tests train (a tiny GPT on a short task),
// one place for the settings they share; each test then sets what it is about.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/train/run.hpp"

namespace posemb::lab::testing {

// The task the tests train unless they say otherwise (symbol tasks: rows of symbols::tokens(n)).
inline const char* const kCopy = "copy";

// A run of `task` with every other setting at its default (lab/config.hpp): the model's vocabulary
// the task's.
inline RunConfig default_run(const std::string& task = kCopy) {
  RunConfig r;
  r.task.kind = task;
  r.model.pe = default_encoding_name();
  r.model.vocab_size = task_vocab_size(r.task);
  return r;
}

// A 2-head, d_model 16 model of `pe` on copy with n <= train_len over `alphabet` symbols, its
// table (if any) and relative-position buckets (if any) of the encoding's default size, the
// encoding's default embedding init.
inline RunConfig tiny_run_config(const std::string& pe, std::size_t train_len, std::size_t alphabet,
                                 std::size_t d_ff) {
  RunConfig r;
  r.task.kind = kCopy;
  r.task.train_len = train_len;
  r.task.alphabet = alphabet;
  r.model.vocab_size = task_vocab_size(r.task);
  r.model.pe = pe;
  r.model.d_model = 16;
  r.model.n_heads = 2;
  r.model.d_ff = d_ff;
  r.model.max_seq_len = find_encoding(pe).default_table_rows(symbols::tokens(train_len));
  r.model.relative_bias = find_encoding(pe).relative_bias_for(symbols::tokens(train_len));
  r.model.embed_init_std = find_encoding(pe).default_embed_init_std;
  return r;
}

// A 2-layer, 2-head, d_model 16 model of `pe` over 9 tokens with init_std 0.3 (far from uniform
// attention); a learned table of table_rows rows (none for a computed encoding), the encoding's
// default relative-position buckets for 9 tokens (if it has buckets).
inline ModelConfig tiny_model_config(const std::string& pe, std::size_t table_rows) {
  ModelConfig cfg;
  cfg.vocab_size = 9;
  cfg.d_model = 16;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 32;
  cfg.pe = pe;
  cfg.max_seq_len = find_encoding(pe).has_table ? table_rows : 0;
  cfg.relative_bias = find_encoding(pe).relative_bias_for(9);
  cfg.init_std = 0.3;
  return cfg;
}

// GradientExchange::sum_of_squares's definition, written out plainly: blocks of `block`
// elements, in each lane j the squares of the elements whose index is j modulo `lanes` in
// increasing order, the lanes folded in halves, the block sums added in order.
inline double blocked_sum_of_squares(std::span<const float> x, std::size_t block,
                                     std::size_t lanes) {
  double total = 0.0;
  for (std::size_t b = 0; b < x.size(); b += block) {
    std::vector<double> lane(lanes, 0.0);
    for (std::size_t k = b; k < x.size() && k < b + block; ++k) {
      lane[k % lanes] += static_cast<double>(x[k]) * static_cast<double>(x[k]);
    }
    for (std::size_t w = lanes / 2; w >= 1; w /= 2) {
      for (std::size_t j = 0; j < w; ++j) lane[j] = lane[j] + lane[j + w];
    }
    total += lane[0];
  }
  return total;
}

// A flat buffer cut into consecutive segments of the given sizes (the layout GradientExchange
// takes a gradient in).
template <class T>
std::vector<std::span<T>> segments_of(T* data, const std::vector<std::size_t>& sizes) {
  std::vector<std::span<T>> out;
  std::size_t at = 0;
  for (const std::size_t n : sizes) {
    out.emplace_back(data + at, n);
    at += n;
  }
  return out;
}

}  // namespace posemb::lab::testing
