#include "lab/report/results.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "lab/report/results_json.hpp"

namespace posemb::lab {
namespace {

std::string fixed6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

}  // namespace

void add_scorings(Scorings& into, const std::vector<LengthResult>& lengths) {
  for (const auto& l : lengths) {
    if (std::find(into.begin(), into.end(), l.scoring) == into.end()) into.push_back(l.scoring);
  }
  std::sort(into.begin(), into.end());
}

Scorings scorings_of(const std::vector<RunResults>& runs) {
  Scorings s;
  for (const auto& r : runs) add_scorings(s, r.results);
  return s;
}

std::string length_csv_header(const Scorings& scorings) {
  std::string h = "status";
  for (const Scoring sc : scorings.empty() ? Scorings{Scoring::greedy} : scorings) {
    for (const auto& c : score_columns(sc)) h += "," + std::string(c.name);
  }
  return h;
}

std::string length_csv_fields(const LengthResult& l, const Scorings& scorings) {
  std::string f = l.beyond_table ? "beyond_table" : "ok";
  for (const Scoring sc : scorings.empty() ? Scorings{Scoring::greedy} : scorings) {
    for (const auto& c : score_columns(sc)) {
      f += ",";
      if (!l.beyond_table && sc == l.scoring) f += fixed6(c.value(l));
    }
  }
  return f;
}

nlohmann::ordered_json length_json(const LengthResult& l) {
  nlohmann::ordered_json x;
  x["length"] = l.length;
  x["status"] = l.beyond_table ? "beyond_table" : "ok";
  for (const auto& c : score_columns(l.scoring)) {
    x[std::string(c.name)] =
        l.beyond_table ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.value(l));
  }
  return x;
}

std::string results_csv(const std::vector<RunResults>& runs) {
  const Scorings sc = scorings_of(runs);
  std::ostringstream o;
  o << "pe,max_seq_len,length," << length_csv_header(sc) << ",seed\n";
  for (const auto& r : runs) {
    for (const auto& l : r.results) {
      o << r.pe << ',' << (r.max_seq_len ? std::to_string(*r.max_seq_len) : "") << ',' << l.length
        << ',' << length_csv_fields(l, sc) << ',' << (r.seed ? std::to_string(*r.seed) : "")
        << '\n';
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
    run["seed"] = r.seed ? nlohmann::ordered_json(*r.seed) : nullptr;
    run["max_seq_len"] = r.max_seq_len ? nlohmann::ordered_json(*r.max_seq_len) : nullptr;
    run["train_seconds"] = r.train_seconds;
    run["results"] = nlohmann::ordered_json::array();
    for (const auto& l : r.results) run["results"].push_back(length_json(l));
    j["runs"].push_back(run);
  }
  return j.dump(2) + "\n";
}

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.count = values.size();
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

std::optional<double> mean_exact_match(const RunResults& run, std::size_t lo, std::size_t hi) {
  if (hi < lo) return std::nullopt;
  double sum = 0.0;
  for (std::size_t n = lo; n <= hi; ++n) {
    const auto it = std::find_if(run.results.begin(), run.results.end(),
                                 [n](const LengthResult& l) { return l.length == n; });
    if (it == run.results.end() || it->beyond_table) return std::nullopt;
    sum += it->exact_match;
  }
  return sum / static_cast<double>(hi - lo + 1);
}

std::vector<LengthSpread> spread_by_length(const std::vector<const RunResults*>& runs) {
  if (runs.empty()) throw std::invalid_argument("spread_by_length: no runs");
  std::vector<LengthSpread> out;
  const auto& first = runs.front()->results;
  for (std::size_t i = 0; i < first.size(); ++i) {
    LengthSpread ls;
    ls.length = first[i].length;
    std::vector<double> exact, token;
    for (const RunResults* r : runs) {
      if (r->results.size() != first.size() || r->results[i].length != ls.length) {
        throw std::invalid_argument("spread_by_length: runs of " + r->pe +
                                    " were evaluated on different lengths");
      }
      const auto& l = r->results[i];
      ls.beyond_table = ls.beyond_table || l.beyond_table;
      exact.push_back(l.exact_match);
      token.push_back(l.token_accuracy);
    }
    if (!ls.beyond_table) {
      ls.exact = spread_of(exact);
      ls.token = spread_of(token);
    }
    out.push_back(ls);
  }
  return out;
}

std::vector<double> curve_mean_exact(const ExtensionRun& run, std::size_t lo, std::size_t hi) {
  std::vector<double> out;
  for (const auto& [step, results] : run.curve) {
    RunResults r;
    r.results = results;
    const auto m = mean_exact_match(r, lo, hi);
    out.push_back(m ? *m : 0.0);
  }
  return out;
}

std::string extension_csv(const std::vector<ExtensionRun>& runs) {
  Scorings sc;
  for (const auto& r : runs) {
    for (const auto& [step, results] : r.curve) add_scorings(sc, results);
  }
  std::ostringstream o;
  o << "method,seed,step,length," << length_csv_header(sc) << '\n';
  for (const auto& r : runs) {
    for (const auto& [step, results] : r.curve) {
      for (const auto& l : results) {
        o << r.method << ',' << r.seed << ',' << step << ',' << l.length << ','
          << length_csv_fields(l, sc) << '\n';
      }
    }
  }
  return o.str();
}

namespace {

// The "runs" array of extension.json and rope_extension.json.
nlohmann::ordered_json extension_runs_json(const std::vector<ExtensionRun>& runs) {
  auto a = nlohmann::ordered_json::array();
  for (const auto& r : runs) {
    nlohmann::ordered_json run;
    run["method"] = r.method;
    run["seed"] = r.seed;
    run["first_loss"] = r.first_loss;
    run["train_seconds"] = r.train_seconds;
    run["curve"] = nlohmann::ordered_json::array();
    for (const auto& [step, results] : r.curve) {
      nlohmann::ordered_json point;
      point["step"] = step;
      point["results"] = nlohmann::ordered_json::array();
      for (const auto& l : results) point["results"].push_back(length_json(l));
      run["curve"].push_back(point);
    }
    run["after"] = nlohmann::ordered_json::array();
    for (const auto& l : r.after) run["after"].push_back(length_json(l));
    a.push_back(run);
  }
  return a;
}

}  // namespace

std::string extension_json(std::size_t train_len, std::size_t extended_train_len,
                           std::size_t table_rows, const std::vector<ExtensionRun>& runs) {
  nlohmann::ordered_json j;
  j["train_len"] = train_len;
  j["extended_train_len"] = extended_train_len;
  j["table_rows"] = table_rows;
  j["runs"] = extension_runs_json(runs);
  return j.dump(2) + "\n";
}

std::string rope_extension_json(std::size_t train_len, std::size_t extended_train_len,
                                double factor, std::size_t original_positions,
                                const std::vector<ExtensionRun>& runs) {
  nlohmann::ordered_json j;
  j["train_len"] = train_len;
  j["extended_train_len"] = extended_train_len;
  j["factor"] = factor;
  j["original_positions"] = original_positions;
  j["runs"] = extension_runs_json(runs);
  return j.dump(2) + "\n";
}

}  // namespace posemb::lab
