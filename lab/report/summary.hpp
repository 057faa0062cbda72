// lab/report/summary.hpp: the demo's summary.md, each published claim (lab/report/claims.hpp)
// beside what this run measured, with its verdict and the rule that decided it.
//
//   std::string md = lab::summary_markdown(rep);   // summary.md (and stdout)
#pragma once

#include <string>

#include "lab/report/claims.hpp"
#include "lab/report/demo_report.hpp"

namespace posemb::lab {

// summary.md: the claims table, the rules, the per-encoding summaries (in distribution, beyond
// L, each as the mean and min-max over seeds), the learned table extension's curve and RoPE's.
std::string summary_markdown(const DemoReport& rep);

// The text demo's summary.md (`posemb demo --task text`, lab/report/lm_summary.cpp): the claims
// of lab/report/lm_claims.hpp with their reasons, bits per byte by length per encoding, the
// learned tables' extension and RoPE's scalings at step 0 and after fine-tuning.
std::string lm_summary_markdown(const DemoReport& rep);

}  // namespace posemb::lab
