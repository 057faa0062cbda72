// lab/report/lm_claims.hpp: the published claims the text demo (`posemb demo --task text`)
// checks, each judged on this run's bits per byte by a rule fixed in lab/report/lm_claims.cpp
// before any run. The claims were made on language (perplexity, bits per character), so here
// they are checked on language: bits per byte of the validation text at L, 2L, 4L, 8L.
//
//   for (const auto& c : lab::judge_lm_claims(rep)) c.reproduced;  // from the numbers
//
// The encodings are found in the registry by their properties (a table at contiguous or
// randomized positions, computed at the input, rotary, a fixed or a trained bias on the scores,
// none), never by name; the extension methods by the library's names (posemb/resize.hpp,
// posemb/rope_scaling.hpp).
#pragma once

#include <vector>

#include "lab/report/claims.hpp"
#include "lab/report/demo_report.hpp"

namespace posemb::lab {

// The nine claims (Vaswani; Press's sinusoidal and ALiBi; T5's bias; Ruoss; Kazemnejad;
// Longformer; Chen; Peng), each judged by its rule on rep's numbers (rep.runs
// evaluated at L, 2L, ...; rep.extension: the learned tables at 2L; rep.rope_extension: each
// scaling at each factor). A claim whose runs are missing is not reproduced, measured
// "not measured". A quick run's verdicts are printed as not judged (summary_numbers::verdict).
std::vector<ClaimVerdict> judge_lm_claims(const DemoReport& rep);

}  // namespace posemb::lab
