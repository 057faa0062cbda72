#include "lab/experiment/sweep_files.hpp"

#include <algorithm>

#include <fmt/core.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "lab/report/results.hpp"
#include "lab/report/results_json.hpp"

namespace posemb::lab {
namespace {

std::string g9(double v) {
  return fmt::format("{:.9g}", v);
}

// The settings columns of a run, in the csv's order.
std::vector<std::pair<std::string, std::string>> settings(const SweepPoint& p,
                                                          const GridOutcome& o) {
  const auto& r = p.run.run;
  return {{"run", p.run.name},
          {"task", p.task},
          {"corpus", r.task.corpus_identity.name},
          {"alphabet", std::to_string(r.task.alphabet)},
          {"train_len", std::to_string(r.task.train_len)},
          {"pe", r.model.pe},
          {"seed", std::to_string(p.seed)},
          {"d_model", std::to_string(r.model.d_model)},
          {"layers", std::to_string(r.model.n_layers)},
          {"heads", std::to_string(r.model.n_heads)},
          {"d_ff", std::to_string(r.model.d_ff)},
          {"batch", std::to_string(r.train.batch)},
          {"micro_batch", std::to_string(r.train.micro_batch)},
          {"steps", std::to_string(r.train.steps)},
          {"lr", fmt::format("{}", r.train.lr)},
          {"max_seq_len", o.results.max_seq_len ? std::to_string(*o.results.max_seq_len) : ""},
          {"final_loss", g9(o.final_loss)},
          {"rope_scaling", p.rope_scaling}};
}

}  // namespace

std::string sweep_csv(const std::vector<SweepPoint>& points,
                      const std::vector<GridOutcome>& outcomes) {
  ResultColumns sc;
  for (const auto& out : outcomes) add_columns(sc, out.results.results);
  const std::string header = length_csv_header(sc);
  // A failed run's row: no length, status failed, every score column empty.
  const std::string failed =
      ",failed" +
      std::string(static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')), ',');
  std::ostringstream o;
  bool first = true;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto cols = settings(points[i], outcomes[i]);
    if (first) {
      for (const auto& [name, value] : cols) o << name << ',';
      o << "length," << header << '\n';
      first = false;
    }
    std::string prefix;
    for (const auto& [name, value] : cols) prefix += value + ",";
    if (!outcomes[i].error.empty()) {
      o << prefix << failed << '\n';
      continue;
    }
    for (const auto& l : outcomes[i].results.results) {
      o << prefix << l.length << ',' << length_csv_fields(l, sc) << '\n';
    }
  }
  return o.str();
}

std::string sweep_json(const std::vector<SweepPoint>& points,
                       const std::vector<GridOutcome>& outcomes) {
  nlohmann::ordered_json j;
  j["runs"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto& out = outcomes[i];
    const auto& r = p.run.run;
    nlohmann::ordered_json run;
    run["name"] = p.run.name;
    run["task"] = p.task;
    if (const CorpusIdentity& c = r.task.corpus_identity; !c.empty()) {
      run["corpus"] = {{"name", c.name}, {"bytes", c.bytes}, {"sha256", c.sha256}};
    } else {
      run["corpus"] = nullptr;
    }
    run["alphabet"] = r.task.alphabet;
    run["train_len"] = r.task.train_len;
    run["pe"] = r.model.pe;
    run["seed"] = p.seed;
    run["d_model"] = r.model.d_model;
    run["layers"] = r.model.n_layers;
    run["heads"] = r.model.n_heads;
    run["d_ff"] = r.model.d_ff;
    run["batch"] = r.train.batch;
    run["micro_batch"] = r.train.micro_batch;
    run["steps"] = r.train.steps;
    run["lr"] = r.train.lr;
    run["max_seq_len"] =
        out.results.max_seq_len ? nlohmann::ordered_json(*out.results.max_seq_len) : nullptr;
    run["final_loss"] =
        std::isfinite(out.final_loss) ? nlohmann::ordered_json(out.final_loss) : nullptr;
    run["rope_scaling"] = p.rope_scaling.empty() ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(p.rope_scaling);
    run["train_seconds"] = out.results.train_seconds;
    run["rank"] = out.rank;
    run["error"] =
        out.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(out.error);
    run["results"] = nlohmann::ordered_json::array();
    for (const auto& l : out.results.results) run["results"].push_back(length_json(l));
    j["runs"].push_back(run);
  }
  return j.dump(2) + "\n";
}

double mean_exact_within(const GridOutcome& o, std::size_t lo, std::size_t hi) {
  double s = 0;
  std::size_t k = 0;
  for (const auto& l : o.results.results) {
    if (l.length >= lo && l.length <= hi && !l.beyond_table) {
      s += l.exact_match;
      ++k;
    }
  }
  return k ? s / static_cast<double>(k) : NAN;
}

std::string sweep_buckets_csv(const std::vector<SweepPoint>& points,
                              const std::vector<GridOutcome>& outcomes) {
  std::ostringstream o;
  o << "run,length," << kBucketCsvHeader << '\n';
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (const auto& l : outcomes[i].results.results) {
      for (const auto& row : bucket_csv_rows(l)) {
        o << points[i].run.name << ',' << l.length << ',' << row << '\n';
      }
    }
  }
  return o.str();
}

double mean_bits_within(const GridOutcome& o, std::size_t lo, std::size_t hi) {
  double s = 0;
  std::size_t k = 0;
  for (const auto& l : o.results.results) {
    if (l.length >= lo && l.length <= hi && !l.beyond_table &&
        l.scoring == Scoring::teacher_forced) {
      s += l.loss / std::numbers::ln2;
      ++k;
    }
  }
  return k ? s / static_cast<double>(k) : NAN;
}

std::vector<std::string> sweep_file_names() {
  return {"results.csv", "results.json", "buckets.csv"};
}

std::vector<std::pair<std::string, std::string>> sweep_data_files(
    const std::vector<SweepPoint>& points, const std::vector<GridOutcome>& outcomes) {
  const auto names = sweep_file_names();
  std::vector<std::pair<std::string, std::string>> files = {
      {names[0], sweep_csv(points, outcomes)}, {names[1], sweep_json(points, outcomes)}};
  ResultColumns c;
  for (const auto& o : outcomes) add_columns(c, o.results.results);
  if (c.windows) files.emplace_back(names[2], sweep_buckets_csv(points, outcomes));
  return files;
}

std::string sweep_failures(const std::vector<SweepPoint>& points,
                           const std::vector<GridOutcome>& outcomes) {
  std::size_t failed = 0;
  std::string first;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].error.empty()) continue;
    if (failed++ == 0) first = points[i].run.name + ": " + outcomes[i].error;
  }
  if (failed == 0) return {};
  return std::to_string(failed) + " of " + std::to_string(outcomes.size()) +
         " runs failed (their rows say 'failed'); the first: " + first;
}

}  // namespace posemb::lab
