// lab/report/claims.hpp: the published claims the demo checks, each judged on this run's numbers
// by a rule fixed in lab/report/claims.cpp before any run.
//
//   for (const auto& c : lab::judge_claims(rep)) c.reproduced;   // from the numbers, never fixed
//
// Each claim's encodings are found in the registry by their properties (lab/encodings/: a table
// at contiguous or randomized positions, computed at the input, rotary, a bias on the scores,
// trained or not, none), never by name; the extension methods copy and random are compared for
// Longformer's claim, the RoPE scalings none, linear and yarn for Chen's and Peng's.
#pragma once

#include <string>
#include <vector>

#include "lab/report/demo_report.hpp"

namespace posemb::lab {

// One published claim and this run's verdict on it.
struct ClaimVerdict {
  std::string claim;      // "Vaswani et al. 2017: learned ~= sinusoidal within the trained length"
  std::string published;  // the paper's numbers
  std::string measured;   // this run's numbers
  std::string rule;       // how the verdict is decided
  bool reproduced = false;
};

// The eight claims (Vaswani, Press, Ruoss, Longformer, Kazemnejad; Press's ALiBi, Chen's position
// interpolation, Peng's YaRN), each judged by its rule on rep's numbers. A claim whose runs are
// missing from rep is "not reproduced" with measured "not measured".
std::vector<ClaimVerdict> judge_claims(const DemoReport& rep);

}  // namespace posemb::lab
