// The lab's data parallelism without MPI: ranks as threads (thread_group.hpp). The gradient
// exchange against a plain in-order sum, the trainer on 2 and 3 ranks against one process (bit
// for bit, every encoding, with clipping, uneven and idle shares), resume across rank counts,
// failures on one rank reaching every rank, rank 0 alone writing, and the grid runner spread over
// ranks and threads giving one process's outcomes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/model/model.hpp"
#include "lab/ranks/distributed.hpp"
#include "lab/ranks/gradient_exchange.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"
#include "temp_dir.hpp"
#include "thread_group.hpp"

namespace posemb::lab {
namespace {

using testing::ThreadGroup;

RunConfig small_run(const std::string& pe = "learned") {
  RunConfig r = testing::tiny_run_config(pe, 4, 4, 32);
  r.train.batch = 7;  // micro-batches of 2, 2, 2, 1
  r.train.micro_batch = 2;
  r.train.warmup = 2;
  r.train.steps = 4;
  r.train.grad_clip = 0.05f;  // small: every step is clipped
  return r;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One scratch folder for the whole test program, removed at exit.
std::filesystem::path scratch(const std::string& name) {
  static const test::TempDir dir;
  return dir.path() / name;
}

void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
}

// The message of every rank's exception; fails the test when a rank has none or a type other
// than JobFailure.
std::vector<std::string> job_failures(const std::vector<std::exception_ptr>& errors) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < errors.size(); ++r) {
    try {
      if (errors[r]) std::rethrow_exception(errors[r]);
      ADD_FAILURE() << "rank " << r << " did not fail";
      out.emplace_back();
    } catch (const JobFailure& e) {
      out.emplace_back(e.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << " threw something else than JobFailure: " << e.what();
      out.emplace_back(e.what());
    }
  }
  return out;
}

TEST(MicroBatchRank, ZigzagsOverTheRanks) {
  const std::vector<int> two = {0, 1, 1, 0, 0, 1, 1, 0};
  const std::vector<int> three = {0, 1, 2, 2, 1, 0, 0, 1, 2};
  for (std::size_t i = 0; i < two.size(); ++i) EXPECT_EQ(micro_batch_rank(i, 2), two[i]) << i;
  for (std::size_t i = 0; i < three.size(); ++i) EXPECT_EQ(micro_batch_rank(i, 3), three[i]) << i;
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(micro_batch_rank(i, 1), 0);
  EXPECT_THROW(micro_batch_rank(0, 0), std::invalid_argument);
}

// Every rank ends with g_0 + g_1 + ... in micro-batch order, element by element, and the sum of
// its squares in element order: the scalar reference's bits, for 1..4 ranks, 1..7 micro-batches
// and segments of awkward sizes (one empty), through shared memory (the thread-ranks are on one
// machine) and through messages; a second step (every gradient doubled, so every sum doubles
// exactly) reuses the exchange's buffers.
void sums_in_micro_batch_order(GradientExchange::Transport transport);

TEST(GradientExchange, SumsInMicroBatchOrderOnEveryRank) {
  for (const auto transport :
       {GradientExchange::Transport::automatic, GradientExchange::Transport::messages}) {
    SCOPED_TRACE(transport == GradientExchange::Transport::automatic ? "shared memory"
                                                                     : "messages");
    sums_in_micro_batch_order(transport);
  }
}

void sums_in_micro_batch_order(GradientExchange::Transport transport) {
  const std::vector<std::size_t> segs = {37, 0, 5, 130};
  const std::size_t G = 172;
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (std::size_t nm = 1; nm <= 7; ++nm) {
      // Values over many magnitudes, so that another order of summation gives other bits.
      std::mt19937 rng(static_cast<unsigned>(100 * ranks + nm));
      std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
      std::uniform_int_distribution<int> expo(-12, 12);
      std::vector<std::vector<float>> g(nm, std::vector<float>(G));
      for (auto& v : g) {
        for (float& x : v) x = std::ldexp(mant(rng), expo(rng));
      }
      std::vector<float> want(G), reversed(G);
      for (std::size_t k = 0; k < G; ++k) {
        float s = 0.0f, t = 0.0f;
        for (std::size_t i = 0; i < nm; ++i) s += g[i][k];
        for (std::size_t i = nm; i-- > 0;) t += g[i][k];
        want[k] = s;
        reversed[k] = t;
      }
      const double want_sq = testing::blocked_sum_of_squares(want, GradientExchange::kSquareBlock,
                                                             GradientExchange::kSquareLanes);
      if (nm >= 3) {
        EXPECT_NE(std::memcmp(want.data(), reversed.data(), G * sizeof(float)), 0)
            << "the data cannot tell summation orders apart";
      }
      ThreadGroup group(ranks);
      std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks), std::vector<float>(G));
      std::vector<std::vector<double>> losses(static_cast<std::size_t>(ranks));
      std::vector<double> squares(static_cast<std::size_t>(ranks));
      std::vector<std::vector<float>> doubled(g);
      for (auto& v : doubled) {
        for (float& x : v) x *= 2.0f;
      }
      std::vector<float> want2(want);
      for (float& x : want2) x *= 2.0f;
      std::vector<std::vector<float>> got2(got);
      expect_no_errors(group.run([&](Communicator& comm) {
        GradientExchange ex(comm, nm, segs, transport);
        const auto r = static_cast<std::size_t>(comm.rank());
        std::vector<std::vector<std::span<const float>>> parts, parts2;
        std::vector<double> my_losses;
        for (const std::size_t i : ex.mine()) {
          EXPECT_EQ(micro_batch_rank(i, ranks), comm.rank());
          parts.push_back(testing::segments_of<const float>(g[i].data(), segs));
          parts2.push_back(testing::segments_of<const float>(doubled[i].data(), segs));
          my_losses.push_back(static_cast<double>(i) + 0.5);
        }
        const auto out = testing::segments_of(got[r].data(), segs);
        ex.sum(parts, out);
        EXPECT_EQ(ex.shares_memory(),
                  ranks > 1 && transport == GradientExchange::Transport::automatic);
        squares[r] = ex.sum_of_squares(out);
        losses[r].resize(nm);
        ex.gather(my_losses, losses[r]);
        ex.sum(parts2, testing::segments_of(got2[r].data(), segs));
      }));
      for (int r = 0; r < ranks; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        EXPECT_EQ(std::memcmp(got[ri].data(), want.data(), G * sizeof(float)), 0)
            << ranks << " ranks, " << nm << " micro-batches, rank " << r;
        EXPECT_EQ(std::memcmp(got2[ri].data(), want2.data(), G * sizeof(float)), 0)
            << ranks << " ranks, " << nm << " micro-batches, rank " << r << ", second step";
        for (std::size_t i = 0; i < nm; ++i) EXPECT_EQ(losses[ri][i], double(i) + 0.5);
        EXPECT_EQ(std::memcmp(&squares[ri], &want_sq, sizeof want_sq), 0) << "rank " << r;
      }
    }
  }
}

// sum_of_squares on 1 to 5 ranks (and on 2 threads in one process) gives the bits of its
// definition (testing::blocked_sum_of_squares) for vectors shorter than a block, of whole blocks,
// and of ranges shorter than a block (a block then spans three ranks), reading only the rank's
// range: the rest of each rank's copy is NaN.
TEST(GradientExchange, SumOfSquaresIsItsDefinitionOnAnyRanksAndThreads) {
  constexpr std::size_t K = GradientExchange::kSquareBlock, L = GradientExchange::kSquareLanes;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-30, 30);
  for (const std::size_t G : {std::size_t{0}, std::size_t{1}, std::size_t{17}, K - 1, K, K + 1,
                              2 * K + K / 2, 5 * K + 3, std::size_t{300007}}) {
    std::vector<float> x(G);
    for (float& v : x) v = std::ldexp(mant(rng), expo(rng));
    const double want = testing::blocked_sum_of_squares(x, K, L);
    double sequential = 0.0;
    for (const float v : x) sequential += double(v) * v;
    if (G > 2 * K) {
      EXPECT_NE(want, sequential) << "the data cannot tell the definition from a plain loop";
    }
    // Segments of uneven sizes, one empty, that do not line up with the blocks.
    std::vector<std::size_t> segs = {G / 3, 0, G / 7};
    segs.push_back(G - segs[0] - segs[2]);
    for (int ranks = 1; ranks <= 5; ++ranks) {
      SCOPED_TRACE(std::to_string(G) + " elements, " + std::to_string(ranks) + " ranks");
      ThreadGroup group(ranks);
      std::vector<double> got(static_cast<std::size_t>(ranks));
      expect_no_errors(group.run([&](Communicator& comm) {
        GradientExchange ex(comm, 1, segs);
        std::vector<float> mine(G, std::numeric_limits<float>::quiet_NaN());
        const auto range = ex.range();
        std::copy(x.begin() + static_cast<std::ptrdiff_t>(range.begin),
                  x.begin() + static_cast<std::ptrdiff_t>(range.end),
                  mine.begin() + static_cast<std::ptrdiff_t>(range.begin));
        got[static_cast<std::size_t>(comm.rank())] =
            ex.sum_of_squares(testing::segments_of(mine.data(), segs));
      }));
      for (const double g : got) EXPECT_EQ(std::memcmp(&g, &want, sizeof g), 0) << g << " " << want;
    }
    const std::size_t threads = parallel_threads();
    set_parallel_threads(2);
    GradientExchange ex(single_process(), 1, segs);
    std::vector<float> copy(x);
    const double two_threads = ex.sum_of_squares(testing::segments_of(copy.data(), segs));
    set_parallel_threads(threads);
    EXPECT_EQ(std::memcmp(&two_threads, &want, sizeof want), 0) << G << " elements, 2 threads";
  }
}

// Trains `cfg` for its steps on `ranks` thread-ranks; returns rank 0's checkpoint bytes and
// checks that every rank saw the same losses as one process (want_losses).
std::string train_on_ranks(const RunConfig& cfg, int ranks, const std::vector<double>& want_losses,
                           const std::string& name) {
  const auto path = scratch(name);
  std::filesystem::remove(path);
  ThreadGroup group(ranks);
  std::vector<std::vector<double>> losses(static_cast<std::size_t>(ranks));
  std::vector<std::vector<float>> params(static_cast<std::size_t>(ranks));
  expect_no_errors(group.run([&](Communicator& comm) {
    Trainer tr(cfg, comm);
    auto& mine = losses[static_cast<std::size_t>(comm.rank())];
    while (tr.step() < cfg.train.steps) mine.push_back(tr.train_step());
    for (const auto& s : tr.model().tensors()) {
      for (std::size_t r = 0; r < s.value.rows(); ++r) {
        const auto row = s.value.row(r);
        params[static_cast<std::size_t>(comm.rank())].insert(
            params[static_cast<std::size_t>(comm.rank())].end(), row.begin(), row.end());
      }
    }
    tr.save(path.string());
  }));
  for (int r = 0; r < ranks; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    EXPECT_EQ(losses[ri], want_losses) << name << ": rank " << r << "'s losses";
    EXPECT_EQ(params[ri], params[0]) << name << ": rank " << r << "'s parameters";
  }
  return read_bytes(path);
}

TEST(DataParallel, RanksGiveOneProcessCheckpointForEveryEncoding) {
  for (const auto* e : encodings()) {
    const RunConfig cfg = small_run(std::string(e->name));
    Trainer one(cfg);
    std::vector<double> losses;
    while (one.step() < cfg.train.steps) losses.push_back(one.train_step());
    const auto path = scratch("one.safetensors");
    one.save(path.string());
    const std::string want = read_bytes(path);
    ASSERT_FALSE(want.empty());
    for (int ranks : {2, 3}) {
      EXPECT_EQ(train_on_ranks(cfg, ranks, losses, "ranks.safetensors"), want)
          << e->name << " on " << ranks << " ranks";
    }
  }
}

// More ranks than micro-batches: the idle rank still takes the same steps.
TEST(DataParallel, AnIdleRankFollows) {
  RunConfig cfg = small_run();
  cfg.train.batch = 4;  // 2 micro-batches for 3 ranks
  Trainer one(cfg);
  std::vector<double> losses;
  while (one.step() < cfg.train.steps) losses.push_back(one.train_step());
  const auto path = scratch("idle_one.safetensors");
  one.save(path.string());
  EXPECT_EQ(train_on_ranks(cfg, 3, losses, "idle.safetensors"), read_bytes(path));
}

// Stopped on 3 ranks, resumed on 2: the uninterrupted single-process checkpoint.
TEST(DataParallel, ResumeAcrossRankCountsEqualsUninterrupted) {
  const RunConfig cfg = small_run("rope");
  Trainer one(cfg);
  while (one.step() < cfg.train.steps) one.train_step();
  const auto want_path = scratch("resume_want.safetensors");
  one.save(want_path.string());
  const auto mid = scratch("resume_mid.safetensors");
  ThreadGroup three(3);
  expect_no_errors(three.run([&](Communicator& comm) {
    Trainer tr(cfg, comm);
    tr.train_step();
    tr.save(mid.string());
  }));
  const auto end = scratch("resume_end.safetensors");
  ThreadGroup two(2);
  expect_no_errors(two.run([&](Communicator& comm) {
    Trainer tr = Trainer::load(mid.string(), comm);
    EXPECT_EQ(tr.step(), 1u);
    while (tr.step() < cfg.train.steps) tr.train_step();
    tr.save(end.string());
  }));
  EXPECT_EQ(read_bytes(end), read_bytes(want_path));
}

TEST(Communicator, CheckTellsEveryRankWhoFailed) {
  ThreadGroup group(3);
  auto msgs = job_failures(group.run([](Communicator& comm) {
    comm.all_or_none("loading", [&] {
      if (comm.rank() == 1) throw std::runtime_error("bad input");
    });
  }));
  for (const auto& m : msgs) EXPECT_EQ(m, "loading: rank 1 of 3 failed: bad input");
  // Two ranks, two messages: both named.
  msgs = job_failures(group.run([](Communicator& comm) {
    comm.all_or_none("step 4", [&] {
      if (comm.rank() != 1) throw std::runtime_error("x" + std::to_string(comm.rank()));
    });
  }));
  for (const auto& m : msgs) {
    EXPECT_EQ(m, "step 4: rank 0 of 3 failed: x0; rank 2 of 3 failed: x2");
  }
  // Every rank with the same message: that message, as one process would say it.
  msgs = job_failures(group.run([](Communicator& comm) {
    comm.all_or_none("step 4", [] { throw std::runtime_error("the loss is nan"); });
  }));
  for (const auto& m : msgs) EXPECT_EQ(m, "the loss is nan");
  // No failure: everyone returns.
  expect_no_errors(group.run([](Communicator& comm) { comm.all_or_none("fine", [] {}); }));
  // One process: the exception itself.
  EXPECT_THROW(single_process().all_or_none("x", [] { throw std::out_of_range("o"); }),
               std::out_of_range);
}

TEST(DataParallel, ASetupFailureOnOneRankReachesEveryRank) {
  ThreadGroup group(2);
  // Rank 1's settings are unusable: its ConfigError reaches rank 0 as a JobFailure.
  auto msgs = job_failures(group.run([](Communicator& comm) {
    RunConfig cfg = small_run();
    if (comm.rank() == 1) cfg.train.lr = -1.0f;
    Trainer tr(cfg, comm);
  }));
  for (const auto& m : msgs) {
    EXPECT_NE(m.find("rank 1 of 2 failed: train config: lr -1"), std::string::npos) << m;
  }
  // Rank 1's settings are usable but not rank 0's: the ranks compare their states.
  msgs = job_failures(group.run([](Communicator& comm) {
    RunConfig cfg = small_run();
    if (comm.rank() == 1) cfg.train.seed = 2;
    Trainer tr(cfg, comm);
  }));
  for (const auto& m : msgs) {
    EXPECT_NE(m.find("do not hold the same model: rank(s) 1 of 2"), std::string::npos) << m;
  }
  // A checkpoint rank 1 cannot read.
  const auto good = scratch("good.safetensors");
  Trainer(small_run()).save(good.string());
  msgs = job_failures(group.run([&](Communicator& comm) {
    Trainer::load(comm.rank() == 0 ? good.string() : scratch("missing.safetensors").string(), comm);
  }));
  for (const auto& m : msgs) {
    EXPECT_NE(m.find("train: reading the checkpoint: rank 1 of 2 failed"), std::string::npos) << m;
  }
}

// On several ranks a trainer's estimate also counts the gradient exchange's message buffers: it
// bounds what each rank's exchange sizes, and a budget between the one-process estimate and the
// 2-rank one refuses the 2-rank trainer on every rank, before it trains.
TEST(DataParallel, TheMemoryEstimateCountsTheExchangeBuffers) {
  const RunConfig cfg = small_run();
  std::size_t elements = 0;
  for (const auto& p : Model::tensor_shapes(cfg.model)) elements += p.rows * p.cols;
  const std::size_t nm = 4;  // micro-batches of 2, 2, 2, 1
  const std::size_t one = Trainer::memory_bytes(cfg), two = Trainer::memory_bytes(cfg, 2);
  EXPECT_EQ(two - one, (nm + 2) * elements * sizeof(float));
  EXPECT_EQ(Trainer::memory_bytes(cfg, 3), two);
  for (const int ranks : {2, 3, 5}) {
    ThreadGroup group(ranks);
    for (const auto& e : group.run([&](Communicator& comm) {
           const GradientExchange ex(comm, nm, {elements}, GradientExchange::Transport::messages);
           // The buffers connect() sizes: this rank's gradients outside its range, the other
           // micro-batches' parts inside it, its range, one whole gradient.
           const std::size_t len = ex.range().end - ex.range().begin, k = ex.mine().size();
           const std::size_t floats = k * (elements - len) + (nm - k) * len + len + elements;
           EXPECT_LE(floats * sizeof(float), two - one) << "rank " << comm.rank();
         })) {
      EXPECT_FALSE(e) << ranks << " ranks";
    }
  }
  const std::size_t limit = memory_limit();
  set_memory_limit((one + two) / 2);
  EXPECT_NO_THROW(Trainer{cfg}) << "one process fits";
  ThreadGroup group(2);
  for (const auto& m :
       job_failures(group.run([&](Communicator& comm) { Trainer tr(cfg, comm); }))) {
    EXPECT_NE(m.find("memory"), std::string::npos) << m;
  }
  set_memory_limit(two);
  for (const auto& e : group.run([&](Communicator& comm) { Trainer(cfg, comm).train_step(); })) {
    EXPECT_FALSE(e);
  }
  set_memory_limit(limit);
}

TEST(DataParallel, RankZeroAloneWrites) {
  ThreadGroup group(2);
  const auto dir = scratch("per_rank");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  expect_no_errors(group.run([&](Communicator& comm) {
    Trainer tr(small_run(), comm);
    tr.save((dir / ("rank" + std::to_string(comm.rank()) + ".safetensors")).string());
  }));
  EXPECT_TRUE(std::filesystem::exists(dir / "rank0.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "rank1.safetensors"));
  // Rank 0's write fails: every rank hears of it.
  const auto msgs = job_failures(group.run([&](Communicator& comm) {
    Trainer tr(small_run(), comm);
    tr.save((dir / "no" / "such" / "dir.safetensors").string());
  }));
  for (const auto& m : msgs) {
    EXPECT_NE(m.find("train: writing the checkpoint: rank 0 of 2 failed"), std::string::npos) << m;
  }
}

// The non-finite loss stops every rank at the same step, before any parameter changes.
TEST(DataParallel, ANonFiniteLossStopsEveryRank) {
  RunConfig cfg = small_run();
  cfg.train.lr = 1e30f;
  cfg.train.grad_clip = 0.0f;
  cfg.train.steps = 20;
  ThreadGroup group(2);
  const auto msgs = job_failures(group.run([&](Communicator& comm) {
    Trainer tr(cfg, comm);
    while (tr.step() < cfg.train.steps) tr.train_step();
  }));
  for (const auto& m : msgs) {
    EXPECT_NE(m.find("train: the loss is"), std::string::npos) << m;
    EXPECT_EQ(m, msgs[0]);
  }
}

std::vector<GridRun> small_grid() {
  std::vector<GridRun> runs;
  for (const char* pe : {"learned", "sinusoidal", "none"}) {
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
      GridRun g;
      g.name = std::string(pe) + " " + std::to_string(seed);
      g.run = small_run(pe);
      g.run.train.seed = seed;
      g.run.train.steps = 3 + seed;
      g.eval.min_len = 1;
      g.eval.max_len = 6;
      g.eval.samples = 4;
      g.eval_at = {0, 2};
      g.keep_table = true;
      runs.push_back(std::move(g));
    }
  }
  return runs;
}

void expect_same_outcomes(const std::vector<GridOutcome>& a, const std::vector<GridOutcome>& b,
                          const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  auto same_rows = [&](const std::vector<LengthResult>& x, const std::vector<LengthResult>& y) {
    ASSERT_EQ(x.size(), y.size()) << what;
    for (std::size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(x[k].length, y[k].length) << what;
      EXPECT_EQ(x[k].beyond_table, y[k].beyond_table) << what;
      EXPECT_EQ(x[k].exact_match, y[k].exact_match) << what;
      EXPECT_EQ(x[k].token_accuracy, y[k].token_accuracy) << what;
      EXPECT_EQ(x[k].detail, y[k].detail) << what;
    }
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].error, b[i].error) << what << " run " << i;
    EXPECT_EQ(a[i].results.pe, b[i].results.pe);
    EXPECT_EQ(a[i].results.max_seq_len, b[i].results.max_seq_len);
    EXPECT_EQ(std::memcmp(&a[i].final_loss, &b[i].final_loss, sizeof(double)), 0) << what;
    same_rows(a[i].results.results, b[i].results.results);
    ASSERT_EQ(a[i].at_steps.size(), b[i].at_steps.size()) << what;
    for (std::size_t k = 0; k < a[i].at_steps.size(); ++k) {
      EXPECT_EQ(a[i].at_steps[k].first, b[i].at_steps[k].first);
      same_rows(a[i].at_steps[k].second, b[i].at_steps[k].second);
    }
    ASSERT_EQ(a[i].table.rows(), b[i].table.rows()) << what;
    ASSERT_EQ(a[i].table.cols(), b[i].table.cols()) << what;
    if (a[i].table.size() != 0) {
      EXPECT_EQ(std::memcmp(a[i].table.data(), b[i].table.data(), a[i].table.size() * 4), 0);
    }
  }
}

TEST(Grid, RanksAndThreadsGiveOneProcessOutcomes) {
  const auto runs = small_grid();
  const auto one = run_grid(runs);
  ASSERT_EQ(one.size(), runs.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].error, "") << i;
    EXPECT_EQ(one[i].at_steps.size(), 2u);
    EXPECT_EQ(one[i].results.results.size(), 6u);
    EXPECT_EQ(one[i].table.rows() != 0, runs[i].run.model.pe == "learned") << i;
    EXPECT_TRUE(std::isfinite(one[i].final_loss));
  }
  GridOptions two_at_a_time;
  two_at_a_time.parallel_runs = 2;
  expect_same_outcomes(run_grid(runs, two_at_a_time), one, "2 runs at a time");
  for (int ranks : {2, 3}) {
    ThreadGroup group(ranks);
    std::vector<std::vector<GridOutcome>> got(static_cast<std::size_t>(ranks));
    expect_no_errors(group.run([&](Communicator& comm) {
      got[static_cast<std::size_t>(comm.rank())] = run_grid(runs, {}, comm);
    }));
    const auto owner = assign_runs(runs, ranks);
    for (int r = 0; r < ranks; ++r) {
      expect_same_outcomes(got[static_cast<std::size_t>(r)], one,
                           std::to_string(ranks) + " ranks, rank " + std::to_string(r));
      for (std::size_t i = 0; i < runs.size(); ++i) {
        EXPECT_EQ(got[static_cast<std::size_t>(r)][i].rank, owner[i]);
      }
    }
  }
}

TEST(Grid, AssignsTheLongestRunsFirstToTheLeastLoaded) {
  // Steps 4, 5, 4, 5, 4, 5, otherwise alike: by cost runs 1, 3, 5 (5 steps), then 0, 2, 4; each
  // to the least loaded rank (the lower on a tie): 1 -> 0, 3 -> 1, 5 -> 0 (tie), 0 -> 1 (5 < 10),
  // 2 -> 1 (9 < 10), 4 -> 0 (10 < 13).
  auto runs = small_grid();
  const auto two = assign_runs(runs, 2);
  EXPECT_EQ(two, (std::vector<int>{1, 0, 1, 1, 0, 0}));
  EXPECT_EQ(assign_runs(runs, 1), std::vector<int>(6, 0));
  EXPECT_EQ(assign_runs(runs, 2), two);  // deterministic
  EXPECT_THROW(assign_runs(runs, 0), std::invalid_argument);
}

TEST(Grid, AFailedRunDoesNotStopTheOthers) {
  auto runs = small_grid();
  runs[1].run.train.lr = 1e30f;
  runs[1].run.train.grad_clip = 0.0f;
  runs[1].run.train.steps = 30;
  runs[1].eval_at.clear();
  const auto out = run_grid(runs);
  EXPECT_NE(out[1].error.find("the loss is"), std::string::npos) << out[1].error;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i != 1) {
      EXPECT_EQ(out[i].error, "") << i;
    }
  }
}

TEST(Grid, RefusesAnUnusableRunBeforeRunningAny) {
  auto runs = small_grid();
  runs[3].run.model.d_model = 15;  // not a multiple of the heads
  try {
    run_grid(runs);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("grid run 3 (sinusoidal 2)"), std::string::npos)
        << e.what();
    EXPECT_FALSE(e.fields().empty());
  }
  runs = small_grid();
  runs[0].eval_at = {99};
  EXPECT_THROW(run_grid(runs), ConfigError);
  GridOptions none;
  none.parallel_runs = 0;
  EXPECT_THROW(run_grid(small_grid(), none), std::invalid_argument);
}

}  // namespace
}  // namespace posemb::lab
