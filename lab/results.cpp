#include "lab/results.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace posemb::lab {

std::string results_csv(const std::vector<RunResults>& runs) {
  std::ostringstream o;
  o << "pe,max_seq_len,length,status,exact_match,token_accuracy\n";
  for (const auto& r : runs) {
    for (const auto& l : r.results) {
      o << r.pe << ',' << (r.max_seq_len ? std::to_string(*r.max_seq_len) : "") << ',' << l.length
        << ',' << (l.beyond_table ? "beyond_table" : "ok") << ',';
      if (!l.beyond_table) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f,%.6f", l.exact_match, l.token_accuracy);
        o << buf;
      } else {
        o << ',';
      }
      o << '\n';
    }
  }
  return o.str();
}

std::string results_json(const std::string& task, std::size_t train_len,
                         const std::vector<RunResults>& runs) {
  nlohmann::ordered_json j;
  j["task"] = task;
  j["train_len"] = train_len;
  j["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : runs) {
    nlohmann::ordered_json run;
    run["pe"] = r.pe;
    run["max_seq_len"] = r.max_seq_len ? nlohmann::ordered_json(*r.max_seq_len) : nullptr;
    run["train_seconds"] = r.train_seconds;
    run["results"] = nlohmann::ordered_json::array();
    for (const auto& l : r.results) {
      nlohmann::ordered_json x;
      x["length"] = l.length;
      x["status"] = l.beyond_table ? "beyond_table" : "ok";
      x["exact_match"] =
          l.beyond_table ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.exact_match);
      x["token_accuracy"] = l.beyond_table ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(l.token_accuracy);
      run["results"].push_back(x);
    }
    j["runs"].push_back(run);
  }
  return j.dump(2) + "\n";
}

}  // namespace posemb::lab
