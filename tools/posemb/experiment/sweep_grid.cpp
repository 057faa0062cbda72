#include "sweep_grid.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli.hpp"

namespace posemb::cli {
namespace {

// "1:3,7" -> 1, 2, 3, 7.
std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  const std::string bad =
      "--seeds '" + text + "' is not a comma-separated list of seeds and ranges A:B (e.g. 1:3,7)";
  auto num = [&](const std::string& s) -> std::uint64_t {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(bad);
    }
    return std::stoull(s);
  };
  std::vector<std::uint64_t> seeds;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      seeds.push_back(num(item));
    } else {
      const std::uint64_t a = num(item.substr(0, colon)), b = num(item.substr(colon + 1));
      if (b < a || b - a >= 100000) throw UsageError(bad + ": a range A:B needs A <= B < A+100000");
      for (std::uint64_t s = a; s <= b; ++s) seeds.push_back(s);
    }
    at = comma + 1;
  }
  return seeds;
}

}  // namespace

std::vector<lab::SweepPoint> make_grid(const SweepOptions& o) {
  const auto seeds = parse_seeds(o.seeds);
  const std::size_t total = o.task.size() * o.alphabet.size() * o.train_len.size() *
                            o.d_model.size() * o.layers.size() * o.heads.size() * o.batch.size() *
                            o.steps.size() * o.lr.size() * o.pe.size() * seeds.size();
  if (total > 100000) {
    throw UsageError("the grid has " + std::to_string(total) + " runs; at most 100000");
  }
  std::vector<lab::SweepPoint> grid;
  for (const auto& task : o.task)
    for (const auto alphabet : o.alphabet)
      for (const auto train_len : o.train_len)
        for (const auto d_model : o.d_model)
          for (const auto layers : o.layers)
            for (const auto heads : o.heads)
              for (const auto batch : o.batch)
                for (const auto steps : o.steps)
                  for (const auto lr : o.lr)
                    for (const auto& pe : o.pe)
                      for (const auto seed : seeds) {
                        LabFlags f = o.lab;
                        f.task = task;
                        f.pe = pe;
                        f.run.task.alphabet = alphabet;
                        f.run.task.train_len = train_len;
                        f.run.model.d_model = d_model;
                        f.run.model.n_layers = layers;
                        f.run.model.n_heads = heads;
                        f.run.train.batch = batch;
                        f.run.train.steps = steps;
                        f.run.train.lr = lr;
                        f.run.train.seed = seed;
                        // --max-seq-len sizes the tables of the encodings that have one.
                        if (!lab::find_encoding(pe).has_table) f.max_seq_len = 0;
                        lab::SweepPoint p;
                        p.task = task;
                        p.seed = seed;
                        p.run.run = finish_lab_flags(f);  // UsageError naming the flags
                        p.run.eval.min_len = 1;
                        p.run.eval.max_len = o.eval_max != 0 ? o.eval_max : 3 * train_len;
                        p.run.eval.samples = o.samples;
                        p.run.eval.seed = o.eval_seed;
                        // The name and group: the axes with more than one value.
                        std::string group;
                        auto axis = [&](const char* name, std::size_t values, const auto& v) {
                          if (values > 1) {
                            group += (group.empty() ? "" : " ") + std::string(name) + "=" +
                                     fmt::format("{}", v);
                          }
                        };
                        axis("task", o.task.size(), task);
                        axis("alphabet", o.alphabet.size(), alphabet);
                        axis("train_len", o.train_len.size(), train_len);
                        axis("d_model", o.d_model.size(), d_model);
                        axis("layers", o.layers.size(), layers);
                        axis("heads", o.heads.size(), heads);
                        axis("batch", o.batch.size(), batch);
                        axis("steps", o.steps.size(), steps);
                        axis("lr", o.lr.size(), lr);
                        p.group = group;
                        p.run.name = (group.empty() ? "" : group + " ") + "pe=" + pe +
                                     " seed=" + std::to_string(seed);
                        grid.push_back(std::move(p));
                      }
  return grid;
}

}  // namespace posemb::cli
