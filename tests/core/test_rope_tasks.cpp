// The rotary embedding's task split (src/core/rope.cpp): batches large enough to be cut into
// several tasks of positions by batch rows (more than 8 batch rows, several blocks of
// positions, a start offset) or of rows in order (explicit ids, padding masks, packed
// documents), with a cache and without, on 1 and 2 threads: bit for bit the scalar reference.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "posemb/parallel.hpp"
#include "posemb/positions.hpp"
#include "posemb/rope.hpp"
#include "rope_reference.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

// One batch of B x T rows of 4 heads of 64, rotated with every position source, with a cache and
// without, on 1 and 2 threads, against the reference.
void check_many_tasks(std::size_t B, std::size_t T) {
  const std::size_t H = 4, D = 64, N = B * T, C = H * D, start = 37;
  Matrix<std::int64_t> ids(B, T), mask(B, T);
  Matrix<TokenId> tokens(B, T);
  std::vector<std::vector<std::int64_t>> want_pos(4);
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t real = 0, doc = 0;
    for (std::size_t t = 0; t < T; ++t) {
      ids(b, t) = static_cast<std::int64_t>((b * 31 + t * 7) % 200);
      mask(b, t) = (t + b) % 5 == 0 ? 0 : 1;
      tokens(b, t) = (t * 3 + b) % 11 == 0 ? 0 : 1;
      want_pos[0].push_back(static_cast<std::int64_t>(start + t));
      want_pos[1].push_back(ids(b, t));
      want_pos[2].push_back(mask(b, t) == 1 ? static_cast<std::int64_t>(real++) : -1);
      want_pos[3].push_back(static_cast<std::int64_t>(doc));
      doc = tokens(b, t) == 0 ? 0 : doc + 1;
    }
  }
  const PositionSource sources[] = {
      PositionSource::contiguous(start), PositionSource::explicit_ids(ids),
      PositionSource::padding_mask(mask), PositionSource::packed(tokens, 0)};
  for (RopeLayout layout : {RopeLayout::half, RopeLayout::interleaved}) {
    const Rope rope(D, layout, {.base = 10000.0, .rotary_dim = 60});
    const RopeCache cache(rope, start + T + 100);
    const reference::RopeGeometry g{H, D, 60, layout};
    // x: a column block of a wider buffer (a strided view), one float off alignment.
    const Matrix<float> buf0 = random_matrix(N, C + 3, 5);
    for (std::size_t k = 0; k < 4; ++k) {
      Matrix<float> want_f = buf0, want_b = buf0;
      reference::rope(MatrixView<float>(want_f.data() + 1, N, C, C + 3), want_pos[k], g, false);
      reference::rope(MatrixView<float>(want_b.data() + 1, N, C, C + 3), want_pos[k], g, true);
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        for (bool cached : {true, false}) {
          SCOPED_TRACE("source " + std::to_string(k) + (cached ? " cached " : " direct ") +
                       std::to_string(threads) + " threads");
          Matrix<float> f = buf0, bw = buf0;
          MatrixView<float> xf(f.data() + 1, N, C, C + 3), xb(bw.data() + 1, N, C, C + 3);
          if (cached) {
            rope_forward(xf, H, B, T, sources[k], cache);
            rope_backward(xb, H, B, T, sources[k], cache);
          } else {
            rope_forward(xf, H, B, T, sources[k], rope);
            rope_backward(xb, H, B, T, sources[k], rope);
          }
          EXPECT_EQ(bytes_of(f), bytes_of(want_f));
          EXPECT_EQ(bytes_of(bw), bytes_of(want_b));
        }
      }
    }
  }
  omp_set_num_threads(1);
}

TEST(RopeTasks, ManyTasksEqualTheScalarReferenceOnOneAndTwoThreads) {
  // The rotation is a streaming loop, parallel from 8 MiB: from 1 MiB here, so that 2 threads
  // share the tasks. Tasks are about 96 rows and go in pairs (task k with task k + half).
  const detail::ScopedMinStreamBytes parallel_from(std::size_t{1} << 20);
  {
    // 11 x 100 rows (2.2 MB read and written): with a cache 22 tasks (a batch row by 96 or 4
    // positions), without one 2 blocks of batch rows by 9 of positions, rows in order 12.
    SCOPED_TRACE("B 11 T 100");
    check_many_tasks(11, 100);
  }
  {
    // 7 x 90 rows: an odd number of tasks in every plan (7, 7 and 7), so one goes unpaired.
    SCOPED_TRACE("B 7 T 90");
    check_many_tasks(7, 90);
  }
}

TEST(RopeTasks, MoreTasksThanScratchSlotsWithoutACache) {
  // Rows of 96 KiB: one row per task, 400 tasks, in chunks of 2 (at most 256 chunks), each chunk
  // computing its angles in its own slot.
  const std::size_t B = 2, T = 200, H = 384, D = 64, N = B * T, C = H * D;
  Matrix<std::int64_t> ids(B, T);
  std::vector<std::int64_t> contiguous, explicit_ids;
  for (std::size_t n = 0; n < N; ++n) {
    ids.data()[n] = static_cast<std::int64_t>((n * 13) % 500);
    contiguous.push_back(static_cast<std::int64_t>(3 + n % T));
    explicit_ids.push_back(ids.data()[n]);
  }
  const Rope rope(D, RopeLayout::half);
  const reference::RopeGeometry g{H, D, D, RopeLayout::half};
  const Matrix<float> x0 = random_matrix(N, C, 8);
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Matrix<float> a = x0, b = x0, want_a = x0, want_b = x0;
    reference::rope(want_a.view(), contiguous, g, false);
    reference::rope(want_b.view(), explicit_ids, g, false);
    rope_forward(a.view(), H, B, T, PositionSource::contiguous(3), rope);
    rope_forward(b.view(), H, B, T, PositionSource::explicit_ids(ids), rope);
    EXPECT_EQ(bytes_of(a), bytes_of(want_a)) << threads << " threads";
    EXPECT_EQ(bytes_of(b), bytes_of(want_b)) << threads << " threads";
  }
  omp_set_num_threads(1);
}

TEST(RopeTasks, ReserveGivesTheSameRowsOnOneAndTwoThreads) {
  // 5000 positions of 64 pairs: 320000 values, above the parallel threshold.
  const Rope rope(128, RopeLayout::half, {.base = 500000.0});
  std::vector<std::vector<unsigned char>> cos, sin;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    RopeCache cache(rope, 100);
    cache.reserve(5000);
    cos.push_back(bytes_of(cache.cos()));
    sin.push_back(bytes_of(cache.sin()));
  }
  omp_set_num_threads(1);
  EXPECT_EQ(cos[0], cos[1]);
  EXPECT_EQ(sin[0], sin[1]);
  // Against the reference's angles at a few rows.
  const RopeCache cache(rope, 5000);
  const reference::RopeGeometry g{1, 128, 128, RopeLayout::half, 500000.0};
  std::vector<float> c, s;
  for (std::size_t p : {0u, 99u, 100u, 2047u, 4999u}) {
    reference::rope_angles(p, g, c, s);
    for (std::size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(cache.cos()(p, i), c[i]) << p << ", " << i;
      ASSERT_EQ(cache.sin()(p, i), s[i]) << p << ", " << i;
    }
  }
}

}  // namespace
}  // namespace posemb
