#include "conflux/core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace conflux {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (std::size_t n : {0u, 1u, 3u, 100u, 1001u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) hits[i]++;
      });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
    }
  }
}

TEST(ThreadPool, RethrowsWorkerExceptions) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(90,
                                 [](std::size_t b, std::size_t) {
                                   if (b > 0) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  int calls = 0;
  pool.parallel_for(1, [&](std::size_t, std::size_t) { ++calls; });  // still usable
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace conflux
