#include "lab/experiment/grid.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

#include "lab/encodings/registry.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/ranks/agreement.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {
namespace {

using json = nlohmann::json;

// Multiply-adds of a run's training (forward and backward of every step).
double estimated_cost(const RunConfig& r) {
  return Trainer::training_work(r);
}

json buckets_json(const std::vector<LossBucket>& buckets) {
  json a = json::array();
  for (const auto& b : buckets) a.push_back({b.begin, b.end, b.nll, b.count});
  return a;
}

// A length as it travels between ranks (CBOR: doubles exactly), every field.
json length_json(const LengthResult& l) {
  return {{"length", l.length},
          {"beyond", l.beyond_table},
          {"scoring", static_cast<int>(l.scoring)},
          {"exact", l.exact_match},
          {"token", l.token_accuracy},
          {"loss", l.loss},
          {"counted", l.counted},
          {"samples", l.samples},
          {"detail", l.detail},
          {"dropped", l.dropped},
          {"buckets", buckets_json(l.buckets)},
          {"sliding", {l.sliding.stride, l.sliding.loss, l.sliding.counted, l.sliding.dropped}}};
}

LengthResult length_from(const json& j) {
  LengthResult l;
  l.length = j.at("length");
  l.beyond_table = j.at("beyond");
  l.scoring = static_cast<Scoring>(j.at("scoring").get<int>());
  l.exact_match = j.at("exact");
  l.token_accuracy = j.at("token");
  l.loss = j.at("loss");
  l.counted = j.at("counted");
  l.samples = j.at("samples");
  l.detail = j.at("detail");
  l.dropped = j.at("dropped");
  for (const auto& b : j.at("buckets")) l.buckets.push_back({b[0], b[1], b[2], b[3]});
  const json& sl = j.at("sliding");
  l.sliding = {sl.at(0), sl.at(1), sl.at(2), sl.at(3)};
  return l;
}

json lengths_json(const std::vector<LengthResult>& v) {
  json a = json::array();
  for (const auto& l : v) a.push_back(length_json(l));
  return a;
}

std::vector<LengthResult> lengths_from(const json& a) {
  std::vector<LengthResult> v;
  for (const auto& j : a) v.push_back(length_from(j));
  return v;
}

// An outcome as bytes (CBOR: doubles travel exactly) and back, to gather them across ranks.
std::vector<std::uint8_t> encode(std::size_t index, const GridOutcome& o) {
  json j;
  j["index"] = index;
  j["pe"] = o.results.pe;
  j["max_seq_len"] = o.results.max_seq_len ? json(*o.results.max_seq_len) : json(nullptr);
  j["seconds"] = o.results.train_seconds;
  j["results"] = lengths_json(o.results.results);
  j["at_steps"] = json::array();
  for (const auto& [step, rows] : o.at_steps) {
    j["at_steps"].push_back({{"step", step}, {"results", lengths_json(rows)}});
  }
  // NaN has no JSON number: the losses travel as their bits.
  j["loss_bits"] = std::bit_cast<std::uint64_t>(o.final_loss);
  j["first_loss_bits"] = std::bit_cast<std::uint64_t>(o.first_loss);
  j["scaled"] = json::array();
  for (const auto& rows : o.scaled) j["scaled"].push_back(lengths_json(rows));
  j["rank"] = o.rank;
  j["error"] = o.error;
  j["table_rows"] = o.table.rows();
  j["table_cols"] = o.table.cols();
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(o.table.data());
  j["table"] = json::binary(std::vector<std::uint8_t>(bytes, bytes + o.table.size() * 4));
  return json::to_cbor(j);
}

std::pair<std::size_t, GridOutcome> decode(std::span<const std::uint8_t> bytes) {
  const json j = json::from_cbor(bytes.begin(), bytes.end());
  GridOutcome o;
  o.results.pe = j.at("pe");
  if (!j.at("max_seq_len").is_null()) o.results.max_seq_len = j.at("max_seq_len");
  o.results.train_seconds = j.at("seconds");
  o.results.results = lengths_from(j.at("results"));
  for (const auto& s : j.at("at_steps")) {
    o.at_steps.emplace_back(s.at("step"), lengths_from(s.at("results")));
  }
  o.final_loss = std::bit_cast<double>(j.at("loss_bits").get<std::uint64_t>());
  o.first_loss = std::bit_cast<double>(j.at("first_loss_bits").get<std::uint64_t>());
  for (const auto& rows : j.at("scaled")) o.scaled.push_back(lengths_from(rows));
  o.rank = j.at("rank");
  o.error = j.at("error");
  const std::size_t rows = j.at("table_rows"), cols = j.at("table_cols");
  if (rows * cols != 0) {
    const auto& bin = j.at("table").get_binary();
    o.table = Matrix<float>(rows, cols);
    std::memcpy(o.table.data(), bin.data(), rows * cols * sizeof(float));
  }
  return {j.at("index").get<std::size_t>(), std::move(o)};
}

// Building a model sets OpenBLAS's thread count (a process-wide setting): one at a time.
std::mutex& model_setup() {
  static std::mutex m;
  return m;
}

// Trains and evaluates one run on this thread; failures go into the outcome.
GridOutcome run_one(std::size_t index, const GridRun& g, const GridOptions& opt, int rank) {
  GridOutcome out;
  out.rank = rank;
  out.results.pe = g.run.model.pe;
  out.final_loss = std::numeric_limits<double>::quiet_NaN();
  out.first_loss = out.final_loss;
  const auto report = [&](std::size_t step, double loss, bool finished) {
    if (opt.progress) opt.progress({index, &g, step, g.run.train.steps, loss, finished});
  };
  try {
    std::unique_ptr<Trainer> tr;
    {
      const std::lock_guard<std::mutex> lock(model_setup());
      tr = g.init_from.empty()
               ? std::make_unique<Trainer>(g.run)
               : std::make_unique<Trainer>(Trainer::from_checkpoint(g.init_from, g.run, g.table));
    }
    if (g.prepare) g.prepare(*tr);
    const RunConfig& cfg = tr->config();  // init_from: the table gives max_seq_len
    if (tr->model().encoding_spec().has_table) out.results.max_seq_len = cfg.model.max_seq_len;
    std::vector<std::size_t> at = g.eval_at;
    std::sort(at.begin(), at.end());
    std::size_t next = 0;
    double seconds = 0.0;
    for (;;) {
      for (; next < at.size() && at[next] <= tr->step(); ++next) {
        if (at[next] == tr->step()) {
          out.at_steps.emplace_back(tr->step(),
                                    evaluate(tr->model(), cfg.task, g.probe.value_or(g.eval)));
        }
      }
      if (tr->step() >= g.run.train.steps) break;
      const auto t0 = std::chrono::steady_clock::now();
      out.final_loss = tr->train_step();
      if (tr->step() == 1) out.first_loss = out.final_loss;
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      report(tr->step(), out.final_loss, false);
    }
    out.results.train_seconds = seconds;
    out.results.results = evaluate(tr->model(), cfg.task, g.eval);
    for (const RopeScalingConfig& s : g.eval_scalings) {
      const ModelConfig mc = scaled_model(cfg, s);
      if (mc.rope_scaling == cfg.model.rope_scaling) {  // the model's own: evaluated above
        out.scaled.push_back(out.results.results);
        continue;
      }
      std::unique_ptr<Model> scaled;
      {
        const std::lock_guard<std::mutex> lock(model_setup());
        scaled = std::make_unique<Model>(mc);
      }
      auto from = tr->model().tensors();
      auto to = scaled->tensors();
      for (std::size_t k = 0; k < to.size(); ++k) {
        copy_into(to[k].value, from[k].value, to[k].name, "the trained model");
      }
      out.scaled.push_back(evaluate(*scaled, cfg.task, g.eval));
    }
    if (g.keep_table) {
      if (const auto* t = tr->model().encoding().learned_table()) {
        const auto v = t->table();
        out.table = Matrix<float>(v.rows(), v.cols());
        for (std::size_t r = 0; r < v.rows(); ++r) {
          std::copy_n(v.row(r).data(), v.cols(), out.table.row(r).data());
        }
      }
    }
    if (!g.checkpoint.empty()) tr->save(g.checkpoint);
  } catch (const std::exception& e) {
    out.error = e.what();
  } catch (...) {
    out.error = "an exception not derived from std::exception";
  }
  report(g.run.train.steps, out.final_loss, true);
  return out;
}

}  // namespace

void validate_grid(std::span<const GridRun> runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& g = runs[i];
    const std::string who = "grid run " + std::to_string(i) + " (" + g.name + "): ";
    try {
      validate_run(g.run);
      g.eval.validate();
      // Every run's work, the training's and the evaluation's, before any run starts.
      Trainer::check_training_work(g.run);
      check_evaluation(g.run.model, g.run.task, g.eval);
      if (g.probe) {
        g.probe->validate();
        check_evaluation(g.run.model, g.run.task, *g.probe);
      }
      for (const RopeScalingConfig& s : g.eval_scalings) validate_model(scaled_model(g.run, s));
    } catch (const ConfigError& e) {
      throw ConfigError(e.fields(), who + e.what());
    }
    for (const std::size_t s : g.eval_at) {
      if (s > g.run.train.steps) {
        throw ConfigError({"train.steps"}, who + "an evaluation at step " + std::to_string(s) +
                                               " is past the run's " +
                                               std::to_string(g.run.train.steps) + " steps");
      }
    }
  }
}

ModelConfig scaled_model(const RunConfig& trained, const RopeScalingConfig& s) {
  ModelConfig m = trained.model;
  m.rope_scaling = rope_scaling_for(trained, s.method, s.factor);
  return m;
}

std::string grid_settings(std::span<const GridRun> runs) {
  std::string s;
  auto eval = [&](const EvalConfig& e) {
    for (const auto v : {e.min_len, e.max_len, e.samples, static_cast<std::size_t>(e.seed),
                         static_cast<std::size_t>(e.randomized_eval), e.stride, e.text_bytes}) {
      s += std::to_string(v) + ',';
    }
    for (const auto n : e.lengths) s += std::to_string(n) + ' ';
  };
  for (const GridRun& r : runs) {
    s += r.name + '\n' + r.run.to_json() + '\n';
    eval(r.eval);
    s += r.probe ? "probe " : "no probe ";
    if (r.probe) eval(*r.probe);
    for (const std::size_t at : r.eval_at) s += std::to_string(at) + ' ';
    s += '\n' + r.init_from + '\n' + r.table + '\n' + (r.keep_table ? "keep" : "") + '\n';
    for (const auto& sc : r.eval_scalings)
      s += sc.method + ' ' + std::to_string(std::bit_cast<std::uint64_t>(sc.factor)) + ' ';
    s += '\n';
  }
  return s;
}

std::vector<int> assign_runs(std::span<const GridRun> runs, int ranks) {
  if (ranks < 1) throw std::invalid_argument("assign_runs: " + std::to_string(ranks) + " ranks");
  std::vector<std::size_t> order(runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<double> cost(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) cost[i] = estimated_cost(runs[i].run);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  std::vector<int> rank_of(runs.size());
  for (const std::size_t i : order) {
    const auto r =
        static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    rank_of[i] = static_cast<int>(r);
    load[r] += cost[i];
  }
  return rank_of;
}

std::vector<GridOutcome> run_grid(std::span<const GridRun> runs, const GridOptions& options,
                                  Communicator& comm) {
  if (options.parallel_runs == 0) {
    throw std::invalid_argument("run_grid: parallel_runs must be at least 1");
  }
  validate_grid(runs);
  check_same_on_every_rank(comm, "sweep", grid_settings(runs));  // lab/ranks/agreement.hpp
  const auto rank_of = assign_runs(runs, comm.size());
  std::vector<std::size_t> mine;  // in the order assign_runs placed them: the costliest first
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (rank_of[i] == comm.rank()) mine.push_back(i);
  }
  std::stable_sort(mine.begin(), mine.end(), [&](std::size_t a, std::size_t b) {
    return estimated_cost(runs[a].run) > estimated_cost(runs[b].run);
  });
  std::vector<GridOutcome> local(mine.size());
  // parallel_runs at a time, the costliest first, each on the thread that took it (its kernels
  // and micro-batches run there alone); one at a time, each run uses the process's threads.
  // run_one keeps a run's failure in its outcome: nothing leaves a task.
  parallel_tasks(
      mine.size(), std::min<std::size_t>(options.parallel_runs, 1024),
      [&](std::size_t k) { local[k] = run_one(mine[k], runs[mine[k]], options, comm.rank()); });
  std::vector<GridOutcome> all(runs.size());
  if (comm.size() == 1) {
    for (std::size_t k = 0; k < mine.size(); ++k) all[mine[k]] = std::move(local[k]);
    return all;
  }
  // Gather: each rank's outcomes as one byte string, each outcome an 8-byte length and its CBOR.
  std::vector<std::uint8_t> bytes;
  comm.all_or_none("sweep: gathering the results", [&] {
    for (std::size_t k = 0; k < mine.size(); ++k) {
      const auto b = encode(mine[k], local[k]);
      const std::uint64_t len = b.size();
      const auto* p = reinterpret_cast<const std::uint8_t*>(&len);
      bytes.insert(bytes.end(), p, p + sizeof len);
      bytes.insert(bytes.end(), b.begin(), b.end());
    }
  });
  const auto totals = gather_sizes(comm, bytes.size(), std::uint64_t{1} << 32, "sweep: results");
  const std::vector<std::size_t> counts(totals.begin(), totals.end());
  std::vector<std::uint8_t> every(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
  comm.allgatherv(std::span<const std::uint8_t>(bytes), std::span<std::uint8_t>(every), counts);
  for (std::size_t at = 0; at < every.size();) {
    std::uint64_t len = 0;
    if (every.size() - at < sizeof len) throw CommunicationError("sweep: malformed results");
    std::memcpy(&len, every.data() + at, sizeof len);
    at += sizeof len;
    if (len > every.size() - at) throw CommunicationError("sweep: malformed results");
    auto [index, outcome] = decode(std::span<const std::uint8_t>(every.data() + at, len));
    all.at(index) = std::move(outcome);
    at += len;
  }
  return all;
}

}  // namespace posemb::lab
