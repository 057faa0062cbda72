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

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/encodings/encoding.hpp"
#include "lab/report/demo_report.hpp"

namespace posemb::lab {

// One published claim and this run's verdict on it.
struct ClaimVerdict {
  std::string claim;      // "Vaswani et al. 2017: learned ~= sinusoidal within the trained length"
  std::string published;  // the paper's numbers
  std::string measured;   // this run's numbers
  std::string rule;       // how the verdict is decided
  bool reproduced = false;
  std::string reason;  // the text demo's: which part of the rule failed ("" when reproduced)
};

// The encodings the claims are about, each by properties (lab/encodings/encoding.hpp) that one
// registered encoding of the demo has: never by its name or its place in the registry, and a
// trained bias on the scores is never taken for ALiBi's fixed one (trainable tells them apart).
struct ClaimRole {
  std::string_view role;  // "a fixed bias on the scores (ALiBi)"
  bool (*matches)(const EncodingSpec& e);
};
std::span<const ClaimRole> claim_roles();
// The registered in-demo encoding that plays `role`, or nullptr; throws std::logic_error naming
// both when two do (a new encoding needs a property that tells it apart).
const EncodingSpec* encoding_of(const ClaimRole& role);

// The eight claims (Vaswani, Press, Ruoss, Longformer, Kazemnejad; Press's ALiBi, Chen's position
// interpolation, Peng's YaRN), each judged by its rule on rep's numbers. A claim whose runs are
// missing from rep is "not reproduced" with measured "not measured".
std::vector<ClaimVerdict> judge_claims(const DemoReport& rep);

}  // namespace posemb::lab
