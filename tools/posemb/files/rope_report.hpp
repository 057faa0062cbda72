// tools/posemb/files/rope_report.hpp: what `posemb rope` prints about a config's rotary
// embedding, as text or as one JSON object.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "posemb/rope.hpp"
#include "posemb/rope_config.hpp"
#include "posemb/rope_precision.hpp"

namespace posemb::cli {

struct RopeReport {
  std::string path;
  const RopeConfig* config = nullptr;
  const Rope* rope = nullptr;             // the config's Rope at seq_len
  std::size_t seq_len = 0;                // as given (0: the trained length)
  std::vector<AnglePrecision> precision;  // empty: not asked for
  std::size_t precision_positions = 0;
  double threshold = 0.0;
};

// A header, one line per pair (inverse frequency, wavelength, stretch, treatment), then the
// precision table when there is one.
std::string rope_report_text(const RopeReport& r);

// One JSON object: rope_type, head_dim, rotary_dim, base, base_in_effect, attention_factor,
// trained_length, extended_length, seq_len, inv_freq, wavelengths, stretch, treatment,
// warnings, and precision when asked for.
std::string rope_report_json(const RopeReport& r);

// Refuses (UsageError naming --seq-len) --precision's angle checks at r.precision_positions
// past kAnglePrecisionMaxWork (2^31, about a minute), before any is made: a 65536-column head
// over 2^20 positions ran for hours.
void refuse_precision_work(const RopeReport& r);

// The line `posemb rope --set` prints after writing `out` (already quoted for the terminal): the
// keys it wrote (rope_scaling, rope_parameters or both), the type, and the lengths as `posemb
// rope` then reports them (RopeConfig::extended_length): the factor's length, unless
// max_position_embeddings is past the trained length: then that is how far it runs.
std::string rope_set_report(const std::string& out, const std::vector<std::string>& keys,
                            const std::string& type, const RopeConfig& c, double factor);

}  // namespace posemb::cli
