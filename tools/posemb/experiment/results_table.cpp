#include "results_table.hpp"

#include <fmt/core.h>

namespace posemb::cli {

void print_results_table(const std::vector<NamedResults>& runs, std::size_t train_len) {
  if (runs.empty()) return;
  fmt::print(
      "\nexact-match / per-token accuracy by length n (greedy decoding; trained on n <= "
      "{}):\n",
      train_len);
  fmt::print("{:>5} ", "n");
  for (const auto& [name, rows] : runs) fmt::print("| {:^21} ", name);
  fmt::print("\n");
  const auto& first = runs.front().second;
  for (std::size_t i = 0; i < first.size(); ++i) {
    fmt::print("{:>5}{}", first[i].length, first[i].length == train_len ? "*" : " ");
    for (const auto& [name, rows] : runs) {
      if (i >= rows.size()) {
        fmt::print("| {:^21} ", "");
      } else if (rows[i].beyond_table) {
        fmt::print("| {:^21} ", "beyond_table");
      } else {
        fmt::print("| {:>9.3f} / {:<9.3f} ", rows[i].exact_match, rows[i].token_accuracy);
      }
    }
    fmt::print("\n");
  }
  fmt::print("(* = the training length)\n");
}

}  // namespace posemb::cli
