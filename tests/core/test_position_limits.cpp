// Positions are int64 (negative means "no position"): contiguous positions whose start + t
// passes 2^63 - 1 are refused, never returned negative, whatever max_seq_len allows.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "posemb/positions.hpp"

namespace posemb {
namespace {

constexpr std::size_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max();

TEST(PositionLimits, ContiguousPositionsPastInt64AreRefused) {
  struct Case {
    std::size_t start, seq_len;
  };
  for (const Case c : {Case{kMax64 + 1, 1}, Case{kMax64, 2}, Case{kMax64 - 2, 4},
                       Case{kHuge - 3, 2}, Case{std::size_t{1} << 63, 3}}) {
    try {
      (void)resolve_positions(PositionSource::contiguous(c.start), 2, c.seq_len, kHuge);
      ADD_FAILURE() << "start " << c.start << " seq_len " << c.seq_len << ": no error";
    } catch (const std::out_of_range& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("resolve_positions: contiguous positions from " + std::to_string(c.start)),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("2^63 - 1"), std::string::npos) << msg;
    }
  }
}

TEST(PositionLimits, TheLastRepresentablePositionIsReturned) {
  const Matrix<std::int64_t> p =
      resolve_positions(PositionSource::contiguous(kMax64 - 2), 1, 3, kHuge);
  EXPECT_EQ(p(0, 0), std::numeric_limits<std::int64_t>::max() - 2);
  EXPECT_EQ(p(0, 2), std::numeric_limits<std::int64_t>::max());
  for (std::size_t t = 0; t < 3; ++t) EXPECT_GE(p(0, t), 0);
}

}  // namespace
}  // namespace posemb
