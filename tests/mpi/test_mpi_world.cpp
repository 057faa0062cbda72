// The lab on a real MPI job (run by ctest as `mpirun -np 2` and `-np 3`, tests/mpi/run.sh):
// world() is the job, its collectives move every byte where it belongs (zero counts, odd element
// sizes), a failure on one rank reaches all, and the trainer, the gradient exchange and the grid
// runner give one process's bits. Every rank runs every test; a rank whose check fails fails the
// job.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "lab/encodings/registry.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/ranks/distributed.hpp"
#include "lab/ranks/gradient_exchange.hpp"
#include "lab/ranks/world.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"

namespace posemb::lab {
namespace {

Communicator& job() {
  Communicator& w = world();
  w.set_timeout(std::chrono::seconds(120));  // a test that desynchronizes the ranks fails
  return w;
}

TEST(MpiWorld, IsTheJobMpirunStarted) {
  ASSERT_TRUE(mpi_available());
  ASSERT_TRUE(launched_by_mpi());
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  ASSERT_NE(size, nullptr);
  ASSERT_NE(rank, nullptr);
  EXPECT_EQ(job().size(), std::atoi(size));
  EXPECT_EQ(job().rank(), std::atoi(rank));
  EXPECT_GE(job().size(), 2);
}

struct Triple {
  double a, b, c;
};

TEST(MpiWorld, AllgathervPlacesEveryRanksElements) {
  auto& comm = job();
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  std::vector<std::size_t> counts(n);
  for (std::size_t r = 0; r < n; ++r) counts[r] = r;  // rank 0 sends nothing
  std::vector<Triple> mine(me), all(n * (n - 1) / 2);
  for (std::size_t k = 0; k < me; ++k) mine[k] = {double(me), double(k), -1.5 * double(me + k)};
  comm.allgatherv(std::span<const Triple>(mine), std::span<Triple>(all), counts);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t k = 0; k < r; ++k, ++at) {
      EXPECT_EQ(all[at].a, double(r));
      EXPECT_EQ(all[at].b, double(k));
      EXPECT_EQ(all[at].c, -1.5 * double(r + k));
    }
  }
  const auto ranks = comm.allgather(static_cast<std::uint8_t>(me + 7));
  for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(ranks[r], r + 7);
}

TEST(MpiWorld, AlltoallvDeliversEachBlockToItsRank) {
  auto& comm = job();
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  // Rank s sends s + 2r floats to rank r (nothing from rank 0 to rank 0), value 1000 s + 10 r + k.
  std::vector<std::size_t> send_counts(n), recv_counts(n);
  std::vector<float> send;
  for (std::size_t r = 0; r < n; ++r) {
    send_counts[r] = me + 2 * r;
    recv_counts[r] = r + 2 * me;
    for (std::size_t k = 0; k < send_counts[r]; ++k) send.push_back(float(1000 * me + 10 * r + k));
  }
  std::vector<float> recv(std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0}));
  comm.alltoallv(std::span<const float>(send), send_counts, std::span<float>(recv), recv_counts);
  std::size_t at = 0;
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t k = 0; k < recv_counts[s]; ++k, ++at) {
      EXPECT_EQ(recv[at], float(1000 * s + 10 * me + k)) << "from rank " << s;
    }
  }
}

TEST(MpiWorld, AFailureOnOneRankReachesEveryRank) {
  auto& comm = job();
  try {
    comm.all_or_none("loading", [&] {
      if (comm.rank() == 1) throw std::runtime_error("bad input on rank one");
    });
    ADD_FAILURE() << "no rank threw";
  } catch (const JobFailure& e) {
    EXPECT_EQ(std::string(e.what()), "loading: rank 1 of " + std::to_string(comm.size()) +
                                         " failed: bad input on rank one");
  }
  EXPECT_NO_THROW(comm.all_or_none("fine", [] {}));
  EXPECT_FALSE(comm.broken());
}

// Both ways of exchanging: the ranks of this job run on one machine, so the automatic transport
// shares memory; the other sends messages.
constexpr GradientExchange::Transport kTransports[] = {GradientExchange::Transport::automatic,
                                                       GradientExchange::Transport::messages};

void expect_transport(const GradientExchange& ex, GradientExchange::Transport t) {
  EXPECT_EQ(ex.shares_memory(), t == GradientExchange::Transport::automatic)
      << "the ranks of this job are on one machine";
}

TEST(MpiWorld, GradientExchangeSumsInMicroBatchOrder) {
  auto& comm = job();
  const std::vector<std::size_t> segs = {1000, 3, 0, 517};
  const std::size_t G = 1520;
  for (std::size_t nm = 1; nm <= 9; ++nm) {
    for (const auto transport : kTransports) {
      std::mt19937 rng(static_cast<unsigned>(nm));  // the same data on every rank
      std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
      std::uniform_int_distribution<int> expo(-12, 12);
      std::vector<std::vector<float>> g(nm, std::vector<float>(G));
      for (auto& v : g) {
        for (float& x : v) x = std::ldexp(mant(rng), expo(rng));
      }
      std::vector<float> want(G, 0.0f), got(G);
      for (std::size_t k = 0; k < G; ++k) {
        float s = 0.0f;
        for (std::size_t i = 0; i < nm; ++i) s += g[i][k];
        want[k] = s;
      }
      GradientExchange ex(comm, nm, segs, transport);
      std::vector<std::vector<std::span<const float>>> parts;
      for (const std::size_t i : ex.mine()) {
        parts.push_back(testing::segments_of<const float>(g[i].data(), segs));
      }
      const auto out = testing::segments_of(got.data(), segs);
      ex.sum(parts, out);
      expect_transport(ex, transport);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), G * sizeof(float)), 0) << nm;
    }
  }
}

// reduce(): each rank's range of the sum in micro-batch order, the rest of its output untouched;
// the ranges tile the flat vector and pieces() cuts this rank's at the segments; share(): every
// rank's range to every rank; sum_of_squares(): its definition (blocks of lanes), bit for bit.
void reduces_shares_and_adds_squares_in_order(GradientExchange::Transport transport) {
  auto& comm = job();
  const std::vector<std::size_t> segs = {700, 1, 0, 333, 5, 4500};  // more than 2 square blocks
  const std::size_t G = 5539, nm = 5;
  std::mt19937 rng(7);  // the same data on every rank
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-30, 30);
  std::vector<std::vector<float>> g(nm, std::vector<float>(G));
  for (auto& v : g) {
    for (float& x : v) x = std::ldexp(mant(rng), expo(rng));
  }
  std::vector<float> want(G);
  double sequential_sq = 0.0;
  for (std::size_t k = 0; k < G; ++k) {
    float s = 0.0f;
    for (std::size_t i = 0; i < nm; ++i) s += g[i][k];
    want[k] = s;
    sequential_sq += double(s) * s;
  }
  const double want_sq = testing::blocked_sum_of_squares(want, GradientExchange::kSquareBlock,
                                                         GradientExchange::kSquareLanes);
  ASSERT_NE(want_sq, sequential_sq) << "the data cannot tell orders of summation apart";
  GradientExchange ex(comm, nm, segs, transport);
  std::vector<std::vector<std::span<const float>>> parts;
  for (const std::size_t i : ex.mine()) {
    parts.push_back(testing::segments_of<const float>(g[i].data(), segs));
  }
  std::vector<float> got(G, 7.0f);
  const auto out = testing::segments_of(got.data(), segs);
  ex.reduce(parts, out);
  expect_transport(ex, transport);
  const auto mine = ex.range();
  const auto begins = comm.allgather(mine.begin), ends = comm.allgather(mine.end);
  EXPECT_EQ(begins.front(), 0u);
  EXPECT_EQ(ends.back(), G);
  for (std::size_t r = 1; r < begins.size(); ++r) EXPECT_EQ(begins[r], ends[r - 1]);
  for (std::size_t k = 0; k < G; ++k) {
    const bool in = k >= mine.begin && k < mine.end;
    const float w = in ? want[k] : 7.0f;
    ASSERT_EQ(std::memcmp(&got[k], &w, sizeof w), 0)
        << "element " << k << (in ? " in" : " out of") << " rank " << comm.rank() << "'s range";
  }
  std::size_t next = mine.begin;
  for (const auto& piece : ex.pieces(out)) {
    ASSERT_FALSE(piece.data.empty());
    EXPECT_EQ(piece.data.data(), out[piece.segment].data() + piece.offset);
    EXPECT_EQ(static_cast<std::size_t>(piece.data.data() - got.data()), next);
    next += piece.data.size();
  }
  EXPECT_EQ(next, mine.end);
  const double sq = ex.sum_of_squares(out);
  EXPECT_EQ(std::memcmp(&sq, &want_sq, sizeof sq), 0) << sq << " against " << want_sq;
  ex.share(out);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), G * sizeof(float)), 0);
}

TEST(MpiWorld, GradientExchangeReducesSharesAndAddsSquaresInOrder) {
  for (const auto transport : kTransports) reduces_shares_and_adds_squares_in_order(transport);
}

RunConfig small_run(const std::string& pe) {
  RunConfig r = testing::tiny_run_config(pe, 5, 5, 48);
  r.train.batch = 11;  // 6 micro-batches of 2 (the last of 1)
  r.train.micro_batch = 2;
  r.train.warmup = 1;
  r.train.steps = 3;
  r.train.grad_clip = 0.1f;
  return r;
}

std::vector<float> parameters(Trainer& tr) {
  std::vector<float> v;
  for (const auto& s : tr.model().tensors()) {
    for (std::size_t r = 0; r < s.value.rows(); ++r) {
      v.insert(v.end(), s.value.row(r).begin(), s.value.row(r).end());
    }
  }
  return v;
}

TEST(MpiWorld, TrainerOnTheJobEqualsOneProcess) {
  auto& comm = job();
  for (const auto* e : encodings()) {
    const RunConfig cfg = small_run(std::string(e->name));
    Trainer one(cfg);
    Trainer dp(cfg, comm);
    EXPECT_LT(dp.my_micro_batches().size(), one.my_micro_batches().size());
    for (std::size_t s = 0; s < cfg.train.steps; ++s) {
      const double a = one.train_step(), b = dp.train_step();
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << e->name << " step " << s;
    }
    EXPECT_EQ(parameters(one), parameters(dp)) << e->name;
  }
}

// A folder every rank of the job names alike (after rank 0's pid). Collective on first use;
// removed by rank 0 once every rank has finished its tests (SharedDirCleanup).
std::optional<std::filesystem::path> shared_dir_made;

const std::filesystem::path& shared_dir() {
  if (!shared_dir_made) {
    const auto pid = job().allgather(static_cast<long>(::getpid())).front();
    const auto d =
        std::filesystem::temp_directory_path() / ("posemb_test_mpi_world_" + std::to_string(pid));
    std::filesystem::create_directories(d);
    shared_dir_made = d;
  }
  return *shared_dir_made;
}

class SharedDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!shared_dir_made) return;  // the same on every rank: made in the same test
    job().allgather(0L);           // every rank done with the folder
    if (job().rank() == 0) std::filesystem::remove_all(*shared_dir_made);
  }
};
[[maybe_unused]] const auto* const shared_dir_cleanup =
    ::testing::AddGlobalTestEnvironment(new SharedDirCleanup);

// A checkpoint's bytes, written by tr.save (on the job: rank 0 writes, collective) into
// shared_dir(); read back on every rank.
std::string saved(Trainer& tr, const std::string& name) {
  const auto path = (shared_dir() / name).string();
  tr.save(path);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// With gradient clipping active (the norm of the whole sum, which each rank holds a range of),
// a checkpoint written mid-run on the job, the one at the end, and the one after resuming from
// the mid-run checkpoint on the job, each equal one process's, byte for byte (the AdamW moments,
// each rank's current only in its range, are gathered for the write).
TEST(MpiWorld, CheckpointsAndResumeOnTheJobEqualOneProcess) {
  auto& comm = job();
  const std::string me = "r" + std::to_string(comm.rank()) + "_";
  for (const auto* e : encodings()) {
    const RunConfig cfg = small_run(std::string(e->name));
    Trainer one(cfg);
    one.train_step();
    const std::string one_mid = saved(one, me + "one_mid.safetensors");
    while (one.step() < cfg.train.steps) one.train_step();
    const std::string one_end = saved(one, me + "one_end.safetensors");
    RunConfig unclipped = cfg;
    unclipped.train.grad_clip = 0.0f;
    Trainer plain(unclipped);
    while (plain.step() < cfg.train.steps) plain.train_step();
    ASSERT_NE(parameters(plain), parameters(one)) << e->name << ": clipping changed nothing";

    Trainer dp(cfg, comm);
    dp.train_step();
    EXPECT_TRUE(saved(dp, "dp_mid.safetensors") == one_mid) << e->name << ": mid-run checkpoint";
    while (dp.step() < cfg.train.steps) dp.train_step();
    EXPECT_TRUE(saved(dp, "dp_end.safetensors") == one_end) << e->name << ": final checkpoint";
    Trainer resumed = Trainer::load((shared_dir() / "dp_mid.safetensors").string(), comm);
    while (resumed.step() < cfg.train.steps) resumed.train_step();
    EXPECT_TRUE(saved(resumed, "resumed_end.safetensors") == one_end) << e->name << ": resumed";
  }
}

// More ranks than micro-batches (one micro-batch: every rank but rank 0 idle), clipping active:
// the idle ranks still sum and update their ranges; one process's checkpoint.
TEST(MpiWorld, MoreRanksThanMicroBatchesEqualOneProcess) {
  auto& comm = job();
  RunConfig cfg = small_run("learned");
  cfg.train.batch = 2;  // one micro-batch of 2
  Trainer one(cfg), dp(cfg, comm);
  EXPECT_EQ(dp.my_micro_batches().size(), comm.rank() == 0 ? 1u : 0u);
  while (one.step() < cfg.train.steps) one.train_step();
  while (dp.step() < cfg.train.steps) dp.train_step();
  const std::string want = saved(one, "r" + std::to_string(comm.rank()) + "_idle_one.safetensors");
  EXPECT_TRUE(saved(dp, "idle.safetensors") == want) << "rank " << comm.rank();
}

// The learned table's record of trained rows is the summed gradient's (LearnedPositionalEmbedding::
// zero_grad), of which each rank holds its range: every rank records one process's rows.
TEST(MpiWorld, EveryRankRecordsTheTrainedRowsOfOneProcess) {
  auto& comm = job();
  for (const char* pe : {"learned", "learned-randomized"}) {
    RunConfig cfg = small_run(pe);
    cfg.model.max_seq_len = 256;  // rows stay untrained (past the lengths, not drawn)
    Trainer one(cfg), dp(cfg, comm);
    while (one.step() < cfg.train.steps) one.train_step();
    while (dp.step() < cfg.train.steps) dp.train_step();
    const auto want = one.model().encoding().learned_table()->untrained_rows();
    EXPECT_FALSE(want.empty()) << pe;
    EXPECT_LT(want.size(), 256u) << pe;
    EXPECT_EQ(dp.model().encoding().learned_table()->untrained_rows(), want)
        << pe << " on rank " << comm.rank();
  }
}

TEST(MpiWorld, GridOnTheJobEqualsOneProcess) {
  auto& comm = job();
  std::vector<GridRun> runs;
  for (const char* pe : {"learned", "rope", "none"}) {
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
      GridRun g;
      g.name = std::string(pe) + " " + std::to_string(seed);
      g.run = small_run(pe);
      g.run.train.seed = seed;
      g.eval.max_len = 7;
      g.eval.samples = 5;
      g.keep_table = true;
      runs.push_back(std::move(g));
    }
  }
  const auto one = run_grid(runs);
  const auto dp = run_grid(runs, {}, comm);
  const auto owner = assign_runs(runs, comm.size());
  ASSERT_EQ(dp.size(), one.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(dp[i].rank, owner[i]);
    EXPECT_EQ(dp[i].error, "");
    EXPECT_EQ(std::memcmp(&dp[i].final_loss, &one[i].final_loss, sizeof(double)), 0) << i;
    ASSERT_EQ(dp[i].results.results.size(), one[i].results.results.size());
    for (std::size_t k = 0; k < one[i].results.results.size(); ++k) {
      EXPECT_EQ(dp[i].results.results[k].exact_match, one[i].results.results[k].exact_match);
      EXPECT_EQ(dp[i].results.results[k].token_accuracy, one[i].results.results[k].token_accuracy);
      EXPECT_EQ(dp[i].results.results[k].beyond_table, one[i].results.results[k].beyond_table);
    }
    ASSERT_EQ(dp[i].table.size(), one[i].table.size());
    if (one[i].table.size() != 0) {
      EXPECT_EQ(std::memcmp(dp[i].table.data(), one[i].table.data(), one[i].table.size() * 4), 0);
    }
  }
}

}  // namespace
}  // namespace posemb::lab
