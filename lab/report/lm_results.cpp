// The text demo's extension files (lab/report/lm_results.hpp).
#include "lab/report/lm_results.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "lab/report/results_json.hpp"

namespace posemb::lab {
namespace {

// The results of a run's step-0 evaluation (none when it has no point at step 0).
const std::vector<LengthResult>* step0_results(const ExtensionRun& run) {
  for (const auto& [step, results] : run.curve) {
    if (step == 0) return &results;
  }
  return nullptr;
}

// One run's rows: its step-0 evaluation and the one after fine-tuning.
void csv_rows(std::ostringstream& o, const char* experiment, const ExtensionRun& r,
              const ResultColumns& sc) {
  const auto row = [&](std::size_t step, const std::vector<LengthResult>& results) {
    for (const auto& l : results) {
      o << experiment << ',' << r.method << ',' << r.factor << ',' << r.seed << ',' << step << ','
        << l.length << ',' << length_csv_fields(l, sc) << '\n';
    }
  };
  if (const auto* s0 = step0_results(r)) row(0, *s0);
  row(r.steps, r.after);
}

nlohmann::ordered_json lengths_json(const std::vector<LengthResult>& results) {
  auto a = nlohmann::ordered_json::array();
  for (const auto& l : results) a.push_back(length_json(l));
  return a;
}

nlohmann::ordered_json runs_json(const std::vector<ExtensionRun>& runs) {
  auto a = nlohmann::ordered_json::array();
  for (const auto& r : runs) {
    nlohmann::ordered_json run;
    run["method"] = r.method;
    run["factor"] = r.factor;
    run["seed"] = r.seed;
    run["steps"] = r.steps;
    run["first_loss"] = r.first_loss;
    run["train_seconds"] = r.train_seconds;
    const auto* s0 = step0_results(r);
    run["step0"] = s0 != nullptr ? lengths_json(*s0) : nlohmann::ordered_json::array();
    run["after"] = lengths_json(r.after);
    a.push_back(run);
  }
  return a;
}

}  // namespace

double bits_at(const std::vector<LengthResult>& results, std::size_t n) {
  for (const auto& l : results) {
    if (l.length == n && !l.beyond_table) return l.loss / std::numbers::ln2;
  }
  return NAN;
}

double step0_bits(const ExtensionRun& run, std::size_t n) {
  const auto* s0 = step0_results(run);
  return s0 != nullptr ? bits_at(*s0, n) : NAN;
}

double after_bits(const ExtensionRun& run, std::size_t n) {
  return bits_at(run.after, n);
}

std::string lm_extension_csv(const std::vector<ExtensionRun>& table,
                             const std::vector<ExtensionRun>& rope) {
  ResultColumns sc;
  for (const auto* runs : {&table, &rope}) {
    for (const auto& r : *runs) {
      for (const auto& [step, results] : r.curve) add_columns(sc, results);
      add_columns(sc, r.after);
    }
  }
  std::ostringstream o;
  o << "experiment,method,factor,seed,step,length," << length_csv_header(sc) << '\n';
  for (const auto& r : table) csv_rows(o, "table", r, sc);
  for (const auto& r : rope) csv_rows(o, "rotary", r, sc);
  return o.str();
}

std::string lm_extension_json(std::size_t train_len, const std::vector<ExtensionRun>& table,
                              const std::vector<ExtensionRun>& rope) {
  nlohmann::ordered_json j;
  j["train_len"] = train_len;
  j["table"]["extended_train_len"] = 2 * train_len;
  j["table"]["runs"] = runs_json(table);
  j["rotary"]["runs"] = runs_json(rope);
  return j.dump(2) + "\n";
}

}  // namespace posemb::lab
