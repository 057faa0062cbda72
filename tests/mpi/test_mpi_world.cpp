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
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "lab/distributed.hpp"
#include "lab/encoding.hpp"
#include "lab/gradient_exchange.hpp"
#include "lab/sweep.hpp"
#include "lab/trainer.hpp"
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

TEST(MpiWorld, GradientExchangeSumsInMicroBatchOrder) {
  auto& comm = job();
  const std::vector<std::size_t> segs = {1000, 3, 0, 517};
  const std::size_t G = 1520;
  for (std::size_t nm = 1; nm <= 9; ++nm) {
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
    GradientExchange ex(comm, nm, segs);
    std::vector<std::vector<std::span<const float>>> parts;
    for (const std::size_t i : ex.mine()) {
      std::vector<std::span<const float>> p;
      std::size_t at = 0;
      for (const std::size_t s : segs) {
        p.emplace_back(g[i].data() + at, s);
        at += s;
      }
      parts.push_back(std::move(p));
    }
    std::vector<std::span<float>> out;
    std::size_t at = 0;
    for (const std::size_t s : segs) {
      out.emplace_back(got.data() + at, s);
      at += s;
    }
    ex.sum(parts, out);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), G * sizeof(float)), 0) << nm;
  }
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
