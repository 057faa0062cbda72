#include "lab/report/results.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numbers>
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

void add_columns(ResultColumns& into, const std::vector<LengthResult>& lengths) {
  auto& sc = into.scorings;
  for (const auto& l : lengths) {
    if (std::find(sc.begin(), sc.end(), l.scoring) == sc.end()) sc.push_back(l.scoring);
    into.windows = into.windows || scored_on_windows(l);
  }
  std::sort(sc.begin(), sc.end());
}

ResultColumns columns_of(const std::vector<RunResults>& runs) {
  ResultColumns c;
  for (const auto& r : runs) add_columns(c, r.results);
  return c;
}

namespace {

// The scorings of a file's columns (greedy alone when there are none).
std::vector<Scoring> file_scorings(const ResultColumns& c) {
  return c.scorings.empty() ? std::vector<Scoring>{Scoring::greedy} : c.scorings;
}

std::string column_value(const ScoreColumn& c, const LengthResult& l) {
  const double v = c.value(l);
  return c.whole ? std::to_string(static_cast<std::size_t>(v)) : fixed6(v);
}

}  // namespace

std::string length_csv_header(const ResultColumns& columns) {
  std::string h = "status";
  for (const Scoring sc : file_scorings(columns)) {
    for (const auto& c : score_columns(sc)) h += "," + std::string(c.name);
  }
  if (columns.windows) {
    for (const auto& c : window_columns()) h += "," + std::string(c.name);
  }
  return h;
}

std::string length_csv_fields(const LengthResult& l, const ResultColumns& columns) {
  std::string f = l.beyond_table ? "beyond_table" : "ok";
  for (const Scoring sc : file_scorings(columns)) {
    for (const auto& c : score_columns(sc)) {
      f += ",";
      if (!l.beyond_table && sc == l.scoring) f += fixed6(c.value(l));
    }
  }
  if (columns.windows) {
    for (const auto& c : window_columns()) {
      f += ",";
      if (!l.beyond_table && scored_on_windows(l)) f += column_value(c, l);
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
  if (!scored_on_windows(l) || l.beyond_table) return x;
  for (const auto& c : window_columns()) {
    x[std::string(c.name)] = c.whole ? nlohmann::ordered_json(static_cast<std::size_t>(c.value(l)))
                                     : nlohmann::ordered_json(c.value(l));
  }
  x["buckets"] = nlohmann::ordered_json::array();
  for (const auto& b : l.buckets) {
    x["buckets"].push_back({{"begin", b.begin},
                            {"end", b.end},
                            {"count", b.count},
                            {"bits_per_token", b.bits_per_token()}});
  }
  return x;
}

std::vector<std::string> bucket_csv_rows(const LengthResult& l) {
  std::vector<std::string> rows;
  if (l.beyond_table) return rows;
  for (const auto& b : l.buckets) {
    rows.push_back(std::to_string(b.begin) + ',' + std::to_string(b.end) + ',' +
                   std::to_string(b.count) + ',' + fixed6(b.bits_per_token()));
  }
  return rows;
}

std::string buckets_csv(const std::vector<RunResults>& runs) {
  std::ostringstream o;
  o << "pe,seed,length," << kBucketCsvHeader << '\n';
  for (const auto& r : runs) {
    for (const auto& l : r.results) {
      for (const auto& row : bucket_csv_rows(l)) {
        o << r.pe << ',' << (r.seed ? std::to_string(*r.seed) : "") << ',' << l.length << ',' << row
          << '\n';
      }
    }
  }
  return o.str();
}

std::string results_csv(const std::vector<RunResults>& runs) {
  const ResultColumns sc = columns_of(runs);
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

std::string results_json(const TaskConfig& task, const std::vector<RunResults>& runs) {
  nlohmann::ordered_json j;
  j["task"] = task.kind;
  j["train_len"] = task.train_len;
  if (const CorpusIdentity& c = task.corpus_identity; !c.empty()) {
    j["corpus"] = {{"name", c.name}, {"bytes", c.bytes}, {"sha256", c.sha256}};
  }
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
    std::vector<double> exact, token, bits;
    for (const RunResults* r : runs) {
      if (r->results.size() != first.size() || r->results[i].length != ls.length) {
        throw std::invalid_argument("spread_by_length: runs of " + r->pe +
                                    " were evaluated on different lengths");
      }
      const auto& l = r->results[i];
      ls.beyond_table = ls.beyond_table || l.beyond_table;
      exact.push_back(l.exact_match);
      token.push_back(l.token_accuracy);
      bits.push_back(l.loss / std::numbers::ln2);
    }
    if (!ls.beyond_table) {
      ls.exact = spread_of(exact);
      ls.token = spread_of(token);
      ls.bits = spread_of(bits);
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
  ResultColumns sc;
  for (const auto& r : runs) {
    for (const auto& [step, results] : r.curve) add_columns(sc, results);
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
