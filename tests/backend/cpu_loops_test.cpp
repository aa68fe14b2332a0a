// How the CPU backend's loops split work over threads (cpu/loops.h): thread_share's contiguous ranges, and
// weight_rows, the rows of a weight each thread's dense products use, against the shares an optimizer update
// gives the threads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "api/backend/cpu/loops.h"

namespace tower::backend::cpu {
namespace {

TEST(CpuLoops, ThreadSharesAreContiguousAndCoverEveryElement) {
  for (const Index n : {Index{0}, Index{1}, Index{17}, Index{1000}, Index{200704}})
    for (const Index threads : {1, 2, 3, 7}) {
      Index next = 0;
      for (Index t = 0; t < threads; ++t) {
        const ThreadShare s = thread_share(n, threads, t);
        EXPECT_EQ(s.begin, next) << "n=" << n << " threads=" << threads << " t=" << t;
        EXPECT_LE(s.begin, s.end);
        if (s.begin < n && t > 0) EXPECT_EQ(s.begin % 16, 0) << "a share starts off a 64-byte boundary";
        next = s.end;
      }
      EXPECT_EQ(next, n) << "n=" << n << " threads=" << threads;
    }
}

TEST(CpuLoops, WeightRowsFollowTheUpdatesSharesToTheNearestRow) {
  struct Case {
    Index rows, cols, threads;
  };
  for (const Case c : {Case{784, 256, 2}, Case{256, 256, 2}, Case{300, 129, 3}, Case{2, 20000, 3}, Case{5, 7, 4}}) {
    const std::string where = std::to_string(c.rows) + "x" + std::to_string(c.cols) + " on " +
                              std::to_string(c.threads) + " threads";
    Index next = 0;
    for (Index t = 0; t < c.threads; ++t) {
      const ThreadShare r = weight_rows(c.rows, c.cols, c.threads, t);
      EXPECT_EQ(r.begin, next) << where << ", thread " << t;
      EXPECT_LE(r.begin, r.end) << where << ", thread " << t;
      // The first row is the one the update's share starts in, or the next where the share holds less than
      // half of it.
      const Index start = thread_share(c.rows * c.cols, c.threads, t).begin;
      EXPECT_LE(std::llabs(r.begin * c.cols - start), c.cols / 2 + (start == c.rows * c.cols ? c.cols : 0))
          << where << ", thread " << t;
      next = r.end;
    }
    EXPECT_EQ(next, c.rows) << where;
  }
  // The MLP's 784 x 256 kernel on two threads: the update's halves are 392 rows each, and so are the products'.
  EXPECT_EQ(weight_rows(784, 256, 2, 0).end, 392);
}

}  // namespace
}  // namespace tower::backend::cpu
