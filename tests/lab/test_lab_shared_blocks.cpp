// lab::SharedBlocks with ranks as threads (thread_group.hpp): every rank reads what every other
// wrote after a fence, over several rounds in the same blocks; blocks of different sizes, zero
// included; nothing left in /dev/shm; none for any rank when one rank cannot have its block, nor
// for a single process.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "lab/ranks/shared_blocks.hpp"
#include "thread_group.hpp"

namespace posemb::lab {
namespace {

using testing::ThreadGroup;

// The names of this process's shared memory objects in /dev/shm (the thread-ranks' rank 0 is
// this process; other test programs running beside this one have their own).
std::vector<std::string> leftover_blocks() {
  const std::string mine = "posemb-" + std::to_string(getpid()) + "-";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(mine, 0) == 0) out.push_back(name);
  }
  return out;
}

std::uint32_t word(int writer, std::size_t round, std::size_t k) {
  return static_cast<std::uint32_t>(writer * 1000003 + round * 7919 + k * 31 + 1);
}

TEST(SharedBlocks, EveryRankReadsWhatEveryRankWroteAfterAFence) {
  ASSERT_TRUE(std::filesystem::is_directory("/dev/shm")) << "this test needs POSIX shared memory";
  const auto before = leftover_blocks();
  for (int ranks = 2; ranks <= 4; ++ranks) {
    ThreadGroup group(ranks);
    // Rank r's block holds 1000 r + 3 words (rank 0: 3; none of zero bytes), except that the
    // last rank's is empty.
    auto words_of = [&](int r) -> std::size_t {
      return r == ranks - 1 ? 0 : static_cast<std::size_t>(1000 * r + 3);
    };
    std::vector<std::string> failures(static_cast<std::size_t>(ranks));
    const auto errors = group.run([&](Communicator& comm) {
      auto blocks = SharedBlocks::create(comm, words_of(comm.rank()) * sizeof(std::uint32_t));
      std::string& fail = failures[static_cast<std::size_t>(comm.rank())];
      if (!blocks) {
        fail = "no shared blocks";
        return;
      }
      for (std::size_t round = 0; round < 3; ++round) {
        blocks->fence();  // the others are done reading the last round
        // Every name is gone once every rank's create() has returned: nothing is left behind,
        // whatever happens to the job later.
        if (round == 0 && leftover_blocks() != before) fail = "a name left behind";
        auto* mine = static_cast<std::uint32_t*>(blocks->mine());
        for (std::size_t k = 0; k < words_of(comm.rank()); ++k) {
          mine[k] = word(comm.rank(), round, k);
        }
        blocks->fence();
        for (int r = 0; r < comm.size(); ++r) {
          if (blocks->bytes_of(r) != words_of(r) * sizeof(std::uint32_t)) fail = "size of a block";
          const auto* theirs = static_cast<const std::uint32_t*>(blocks->of(r));
          for (std::size_t k = 0; k < words_of(r); ++k) {
            if (theirs[k] != word(r, round, k)) {
              fail = "rank " + std::to_string(r) + "'s word " + std::to_string(k) + " in round " +
                     std::to_string(round);
              break;
            }
          }
        }
      }
    });
    for (int r = 0; r < ranks; ++r) {
      EXPECT_FALSE(errors[static_cast<std::size_t>(r)]) << ranks << " ranks, rank " << r;
      EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << ranks << " ranks, rank " << r;
    }
  }
  EXPECT_EQ(leftover_blocks(), before);
}

// A rank that cannot reserve its block (far more than /dev/shm holds) leaves every rank without
// shared blocks (they exchange messages instead), and no name behind.
TEST(SharedBlocks, OneRankWithoutRoomLeavesEveryRankWithout) {
  const auto before = leftover_blocks();
  ThreadGroup group(3);
  std::vector<int> got(3, -1);
  const auto errors = group.run([&](Communicator& comm) {
    const std::size_t bytes = comm.rank() == 1 ? std::size_t{1} << 50 : 4096;
    got[static_cast<std::size_t>(comm.rank())] = SharedBlocks::create(comm, bytes) ? 1 : 0;
  });
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_FALSE(errors[r]) << "rank " << r;
    EXPECT_EQ(got[r], 0) << "rank " << r;
  }
  EXPECT_EQ(leftover_blocks(), before);
}

TEST(SharedBlocks, ASingleProcessHasNone) {
  EXPECT_EQ(SharedBlocks::create(single_process(), 4096), nullptr);
}

}  // namespace
}  // namespace posemb::lab
