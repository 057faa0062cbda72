// tools/posemb/results_table.hpp: accuracy by length as a text table on stdout.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/evaluate.hpp"

namespace posemb::cli {

using NamedResults = std::pair<std::string, std::vector<lab::LengthResult>>;

// One row per length, one "exact / token" column pair per run; beyond_table shown as such.
void print_results_table(const std::vector<NamedResults>& runs, std::size_t train_len);

}  // namespace posemb::cli
