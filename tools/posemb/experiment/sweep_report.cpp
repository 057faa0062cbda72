#include "sweep_report.hpp"

#include <fmt/core.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plots.hpp"

namespace posemb::cli {
namespace {

std::string g9(double v) {
  return fmt::format("{:.9g}", v);
}

// The settings columns of a run, in the csv's order.
std::vector<std::pair<std::string, std::string>> settings(const SweepPoint& p,
                                                          const lab::GridOutcome& o) {
  const auto& r = p.run.run;
  return {{"run", p.run.name},
          {"task", p.task},
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
          {"final_loss", g9(o.final_loss)}};
}

// Mean exact match over the evaluated lengths in [lo, hi] within the table; NaN when none.
double mean_exact(const lab::GridOutcome& o, std::size_t lo, std::size_t hi) {
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

std::string slug(const std::string& group) {
  std::string s;
  for (const char c : group) {
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  }
  return s;
}

}  // namespace

std::string sweep_csv(const std::vector<SweepPoint>& points,
                      const std::vector<lab::GridOutcome>& outcomes) {
  std::ostringstream o;
  bool header = true;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto cols = settings(points[i], outcomes[i]);
    if (header) {
      for (const auto& [name, value] : cols) o << name << ',';
      o << "length,status,exact_match,token_accuracy\n";
      header = false;
    }
    std::string prefix;
    for (const auto& [name, value] : cols) prefix += value + ",";
    if (!outcomes[i].error.empty()) {
      o << prefix << ",failed,,\n";
      continue;
    }
    for (const auto& l : outcomes[i].results.results) {
      o << prefix << l.length << ',' << (l.beyond_table ? "beyond_table" : "ok") << ',';
      if (!l.beyond_table) o << fmt::format("{:.6f},{:.6f}", l.exact_match, l.token_accuracy);
      if (l.beyond_table) o << ',';
      o << '\n';
    }
  }
  return o.str();
}

std::string sweep_json(const std::vector<SweepPoint>& points,
                       const std::vector<lab::GridOutcome>& outcomes) {
  nlohmann::ordered_json j;
  j["runs"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto& out = outcomes[i];
    const auto& r = p.run.run;
    nlohmann::ordered_json run;
    run["name"] = p.run.name;
    run["task"] = p.task;
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
    run["train_seconds"] = out.results.train_seconds;
    run["rank"] = out.rank;
    run["error"] =
        out.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(out.error);
    run["results"] = nlohmann::ordered_json::array();
    for (const auto& l : out.results.results) {
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

std::vector<std::pair<std::string, std::string>> sweep_charts(
    const std::vector<SweepPoint>& points, const std::vector<lab::GridOutcome>& outcomes) {
  // Groups in the grid's order; in each, encodings in the grid's order.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!members.count(points[i].group)) groups.push_back(points[i].group);
    members[points[i].group].push_back(i);
  }
  std::vector<std::pair<std::string, std::string>> charts;
  for (const auto& group : groups) {
    std::vector<std::string> pes;
    std::map<std::string, std::vector<std::size_t>> by_pe;
    for (const std::size_t i : members[group]) {
      if (!outcomes[i].error.empty()) continue;
      const auto& pe = points[i].run.run.model.pe;
      if (!by_pe.count(pe)) pes.push_back(pe);
      by_pe[pe].push_back(i);
    }
    if (pes.empty()) continue;
    // One line per encoding: the mean over its seeds, a band from the lowest to the highest.
    std::vector<EncodingRuns> lines;
    for (const auto& pe : pes) {
      EncodingRuns line{pe, {}};
      for (const std::size_t i : by_pe[pe]) line.runs.push_back(&outcomes[i].results);
      lines.push_back(std::move(line));
    }
    const auto& first = points[members[group][0]];
    const std::size_t L = first.run.run.task.train_len;
    const std::string title = (group.empty() ? first.task : group) +
                              ", trained on n <= " + std::to_string(L) + ": exact match by length";
    const std::string file = group.empty() ? "length_generalization.svg"
                                           : "length_generalization_" + slug(group) + ".svg";
    charts.emplace_back(file, length_generalization_svg(title, L, lines));
  }
  return charts;
}

void print_sweep_summary(const std::vector<SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes) {
  std::size_t width = 3;
  for (const auto& p : points) width = std::max(width, p.run.name.size());
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>11}  {:>8}  {:>4}\n", "run", width, "in-dist", "beyond",
             "final loss", "train s", "rank");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& o = outcomes[i];
    const std::size_t L = points[i].run.run.task.train_len;
    if (!o.error.empty()) {
      fmt::print("{:<{}}  failed: {}\n", points[i].run.name, width, o.error);
      continue;
    }
    auto cell = [](double v) {
      return std::isnan(v) ? std::string("-") : fmt::format("{:.3f}", v);
    };
    fmt::print("{:<{}}  {:>9}  {:>9}  {:>11.5f}  {:>8.1f}  {:>4}\n", points[i].run.name, width,
               cell(mean_exact(o, 1, L)), cell(mean_exact(o, L + 1, SIZE_MAX)), o.final_loss,
               o.results.train_seconds, o.rank);
  }
  fmt::print(
      "(in-dist: mean exact match over n <= train_len; beyond: over the longer evaluated n that "
      "fit the table)\n");
}

}  // namespace posemb::cli
