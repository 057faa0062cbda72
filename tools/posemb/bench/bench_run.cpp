// The measurements of `posemb bench` (bench_run.hpp): the PyTorch peer, the interleaved kernel
// cases with their ratios to the peers, the copy bandwidth and train_step/demo, as one JSON
// document.
#include "bench_run.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_cases.hpp"
#include "cli.hpp"
#include "harness/embedding_cases.hpp"
#include "harness/harness.hpp"
#include "peers/llmc_encoder.hpp"
#include "posemb/parallel.hpp"
#include "posemb/simd.hpp"

namespace posemb::cli {
namespace {

std::vector<int> parse_threads(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) {
    out.push_back(1);
    const auto most = static_cast<int>(parallel_threads());
    if (most > 1) out.push_back(most);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1 || n > 1024) {
      throw UsageError("--threads takes thread counts from 1 to 1024 separated by commas, got '" +
                       text + "'");
    }
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

// The peer scripts: installed beside the tool (<prefix>/share/posemb/peers), else the source
// tree this tool was built from.
std::string default_peer_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "posemb" / "peers";
    if (std::filesystem::exists(installed / "torch_embed.py")) return installed.string();
  }
  return POSEMB_SOURCE_DIR "/bench/peers";
}

nlohmann::json opt_json(std::optional<double> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The PyTorch peer (its own process, per thread count): seconds by (case, threads), and its
// status.
std::map<std::pair<std::string, int>, double> torch_peer(const BenchOptions& o,
                                                         const std::vector<int>& threads,
                                                         const std::string& peer_dir,
                                                         std::string& status) {
  std::map<std::pair<std::string, int>, double> torch;
  status = "not measured (--no-peer)";
  if (o.no_peer) return torch;
  for (int t : threads) {
    const bench::PeerResult r =
        bench::run_peer({o.python, peer_dir + "/torch_embed.py", "--threads", std::to_string(t),
                         "--reps", std::to_string(o.repetitions)});
    if (!r.json) {
      status = r.status;
      break;
    }
    try {
      for (const auto& [k, v] : r.json->at("cases").items()) torch[{k, t}] = v.get<double>();
      status = "torch " + r.json->at("torch").get<std::string>();
    } catch (const std::exception& e) {
      status = std::string("not measured (") + e.what() + ")";
    }
  }
  return torch;
}

// The kernel cases' figures, each beside the same work by the peers, the f32 kernel (for a
// half-precision one) and one thread.
struct CaseTable {
  const std::vector<bench::Case>& cases;
  const std::vector<bench::Harness::Stats>& stats;
  std::vector<double> seconds;  // the reported statistic of each case
  std::map<std::pair<std::string, int>, double> torch;
  std::map<int, double> copy_bw;  // bytes per second by threads

  std::optional<double> find(const std::string& name, bench::Impl impl, int t,
                             const std::string& simd = "") const {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].name() == name && cases[i].impl == impl && cases[i].threads == t &&
          cases[i].simd == simd) {
        return seconds[i];
      }
    }
    return std::nullopt;
  }

  nlohmann::json row(std::size_t i) const {
    const bench::Case& c = cases[i];
    const double s = seconds[i];
    const double bw = c.bytes / s;
    const auto copy = copy_bw.find(c.threads);
    const double of_copy = copy != copy_bw.end() ? bw / copy->second : 0;
    std::optional<double> vs_llmc, vs_omp, vs_torch, vs_f32, vs_1t;
    if (c.impl == bench::Impl::posemb) {
      const bool half = c.op.ends_with("_bf16") || c.op.ends_with("_f16");
      const std::string f32_name = "embed_forward/" + c.shape;
      // The rotations without a cache against the plain loop over a cache (issue 21's floor).
      const std::string uncached = "_uncached";
      const std::string base = half ? f32_name
                               : c.op.ends_with(uncached)
                                   ? c.op.substr(0, c.op.size() - uncached.size()) + "/" + c.shape
                                   : c.name();
      // The serial and OpenMP peers: llm.c's loops, or for the rope cases the plain loop.
      vs_llmc = find(base, bench::Impl::llmc, 1);
      if (!vs_llmc) vs_llmc = find(base, bench::Impl::loop, 1);
      vs_omp = find(base, bench::Impl::llmc_omp, c.threads);
      if (!vs_omp) vs_omp = find(base, bench::Impl::loop_omp, c.threads);
      const auto t = torch.find({c.name(), c.threads});
      if (!half && t != torch.end()) vs_torch = t->second;
      if (half) vs_f32 = find(f32_name, bench::Impl::posemb, c.threads, c.simd);
      if (c.threads != 1) vs_1t = find(c.name(), bench::Impl::posemb, 1, c.simd);
    }
    if ((c.impl == bench::Impl::llmc_omp || c.impl == bench::Impl::loop_omp) && c.threads != 1) {
      vs_1t = find(c.name(), c.impl, 1);
    }
    const bool llmc_peer = c.op.starts_with("embed") || c.op.starts_with("add_positions");
    return {{"name", c.name()},
            {"impl", bench::impl_name(c.impl)},
            {"simd", c.impl == bench::Impl::posemb
                         ? nlohmann::json(c.simd.empty() ? simd_target() : c.simd)
                         : nlohmann::json(nullptr)},
            {"shape", c.shape_text},
            {"threads", c.threads},
            {"seconds", s},
            {"median_seconds", stats[i].median},
            {"min_seconds", stats[i].min},
            {"bytes", c.bytes},
            {"GBps", bw / 1e9},
            {"fraction_of_copy_bandwidth", of_copy},
            {"peer", llmc_peer ? "llm.c" : "loop"},
            {"peer_serial_seconds", opt_json(vs_llmc)},
            {"peer_omp_seconds", opt_json(vs_omp)},
            {"pytorch_seconds", opt_json(vs_torch)},
            {"f32_seconds", opt_json(vs_f32)},
            {"one_thread_seconds", opt_json(vs_1t)}};
  }
};

nlohmann::json train_step_json(const StandaloneResult& train, int threads) {
  if (!train.skipped.empty()) {
    return {{"name", train.name},
            {"shape", train.shape},
            {"threads", threads},
            {"skipped", train.skipped}};
  }
  nlohmann::json j = {{"name", train.name},
                      {"shape", train.shape},
                      {"threads", threads},
                      {"simd", train.simd},
                      {"matrix_products", train.blas},
                      {"seconds", train.seconds},
                      {"tokens_per_second", train.tokens / train.seconds},
                      {"pytorch_seconds", opt_json(train.peer_seconds)},
                      {"pytorch_status", train.peer_status}};
  if (!train.peer_coretype.empty()) {
    j["pytorch_openblas_coretype"] = train.peer_coretype;
    j["pytorch_coretype_seconds"] = opt_json(train.peer_coretype_seconds);
    j["pytorch_coretype_status"] = train.peer_coretype_status;
  }
  return j;
}

// Whether o's training-step cases run: not with --no-train-step, and with --filter only those whose
// name contains it.
bool train_steps_selected(const BenchOptions& o) {
  if (o.no_train_step) return false;
  const auto names = train_step_names();
  return o.filter.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
           return n.find(o.filter) != std::string::npos;
         });
}

// The kernel cases of `o` (with --lab-kernels the lab's too; each posemb case once per target of
// `targets`), kept by --filter with the references they need; throws UsageError for a filter that
// matches no case (a training step's name included).
std::vector<bench::Case> select_cases(const BenchOptions& o, const std::vector<int>& threads,
                                      bool llmc, const std::vector<std::string>& targets) {
  std::vector<bench::Case> cases = bench::embedding_cases(threads, llmc);
  if (o.lab_kernels) {
    for (auto& c : lab_kernel_cases(threads)) cases.push_back(std::move(c));
  }
  cases = bench::for_targets(std::move(cases), targets);
  // The references stay: the copy, and the machine's row reads for a shape that has a case left.
  const auto reference = [](const bench::Case& c) {
    return c.impl == bench::Impl::copy || c.impl == bench::Impl::machine;
  };
  if (o.filter.empty()) return cases;
  std::erase_if(cases, [&](const bench::Case& c) {
    return !reference(c) && c.name().find(o.filter) == std::string::npos;
  });
  std::set<std::string> shapes;
  for (const auto& c : cases) {
    if (!reference(c)) shapes.insert(c.shape);
  }
  std::erase_if(cases, [&](const bench::Case& c) {
    return c.impl == bench::Impl::machine && !shapes.contains(c.shape);
  });
  if (std::all_of(cases.begin(), cases.end(), reference) && !train_steps_selected(o)) {
    throw UsageError("--filter '" + o.filter + "' matches no case (names such as " +
                     "rope_forward/gpt2, add_positions_backward/small, embed_forward/gpt2, "
                     "train_step/text)");
  }
  return cases;
}

}  // namespace

nlohmann::json measure_bench(const BenchOptions& o) {
  if (o.repetitions < 1 || o.repetitions > 1000) {
    throw UsageError("--reps " + std::to_string(o.repetitions) + " is not in [1, 1000]");
  }
  const std::vector<int> threads = parse_threads(o.threads);
  const std::string peer_dir = o.peer_dir.empty() ? default_peer_dir() : o.peer_dir;
  const double load_start = bench::load_average();
  std::string llmc_why, torch_status;
  const bool llmc = bench::llmc_peer_available(llmc_why);
  // The cases first: a --filter that matches none is a usage error before anything is measured.
  const std::vector<std::string> targets =
      o.all_targets ? simd_targets() : std::vector<std::string>{};
  std::vector<bench::Case> cases = select_cases(o, threads, llmc, targets);
  auto torch = torch_peer(o, threads, peer_dir, torch_status);
  bench::Harness harness;
  std::vector<bench::Variant> variants;
  for (const auto& c : cases) variants.push_back(c.variant());
  const auto stats = harness.run_interleaved(variants, o.repetitions);
  CaseTable table{cases, stats, {}, std::move(torch), {}};
  for (const auto& st : stats) table.seconds.push_back(o.min ? st.min : st.median);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].impl == bench::Impl::copy) {
      table.copy_bw[cases[i].threads] = cases[i].bytes / table.seconds[i];
    }
  }
  std::vector<StandaloneResult> train;
  if (train_steps_selected(o)) {
    BenchContext ctx;
    ctx.harness = &harness;
    ctx.repetitions = o.repetitions;
    ctx.threads = threads.back();
    ctx.run_peers = !o.no_peer;
    ctx.python = o.python;
    ctx.peer_dir = peer_dir;
    ctx.targets = targets;
    ctx.filter = o.filter;
    train = train_step_cases(ctx);
  }
  posemb::set_simd_target("");  // the process's own choice again, for what follows

  nlohmann::json doc;
  const bench::CpuInfo cpu = bench::cpu_info();
  doc["cpu"] = {{"description", bench::describe(cpu)},
                {"brand", cpu.brand},
                {"vendor", cpu.vendor},
                {"family", cpu.family},
                {"model", cpu.model},
                {"stepping", cpu.stepping},
                {"l1d_bytes", cpu.l1d},
                {"l2_bytes", cpu.l2},
                {"l3_bytes", cpu.l3},
                {"features", cpu.features},
                {"cpus", cpu.cpus}};
  doc["simd_target"] = simd_target();
  doc["simd_targets"] = simd_targets();
  doc["all_targets"] = o.all_targets;
  doc["threads"] = threads;
  doc["repetitions"] = o.repetitions;
  doc["statistic"] = o.min ? "min" : "median";
  doc["flush_bytes"] = harness.flush_bytes();
  doc["load_average"] = {{"start", load_start}, {"end", bench::load_average()}};
  doc["llmc_peer"] =
      llmc ? "llm.c encoder loop, -O3 -march=native" : "not measured (" + llmc_why + ")";
  doc["pytorch_peer"] = torch_status;
  for (const auto& [t, bw] : table.copy_bw) doc["copy_GBps"][std::to_string(t)] = bw / 1e9;
  doc["cases"] = nlohmann::json::array();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].impl != bench::Impl::copy) doc["cases"].push_back(table.row(i));
  }
  if (!train.empty()) {
    doc["train_step"] = nlohmann::json::array();
    for (const auto& t : train) doc["train_step"].push_back(train_step_json(t, threads.back()));
  }
  return doc;
}

}  // namespace posemb::cli
