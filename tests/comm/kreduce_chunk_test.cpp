#include "conflux/comm/kreduce_sync.hpp"

#include <gtest/gtest.h>

namespace conflux::comm {
namespace {

TEST(KReduceChunk, ContiguousCoverWithEarlierChunksLarger) {
  for (std::size_t total : {0u, 1u, 3u, 10u, 11u, 535818u, 1000003u}) {
    for (int parts = 1; parts <= 9; ++parts) {
      std::size_t next = 0;
      for (int k = 0; k < parts; ++k) {
        const GradientChunk c = kreduce_chunk(total, parts, k);
        EXPECT_EQ(c.offset, next) << total << " in " << parts << ", chunk " << k;
        next = c.offset + c.size;
        const GradientChunk first = kreduce_chunk(total, parts, 0);
        EXPECT_LE(first.size - c.size, 1u);  // sizes differ by at most one, earlier larger
        if (k > 0) {
          EXPECT_LE(c.size, kreduce_chunk(total, parts, k - 1).size);
        }
      }
      EXPECT_EQ(next, total) << total << " in " << parts;
    }
  }
}

TEST(KReduceChunk, ExampleSizes) {
  EXPECT_EQ(kreduce_chunk(10, 3, 0).size, 4u);
  EXPECT_EQ(kreduce_chunk(10, 3, 1).offset, 4u);
  EXPECT_EQ(kreduce_chunk(10, 3, 1).size, 3u);
  EXPECT_EQ(kreduce_chunk(10, 3, 2).offset, 7u);
  EXPECT_EQ(kreduce_chunk(10, 3, 2).size, 3u);
  // Fewer elements than chunks: the last chunks are empty.
  EXPECT_EQ(kreduce_chunk(2, 4, 1).size, 1u);
  EXPECT_EQ(kreduce_chunk(2, 4, 2).size, 0u);
  EXPECT_EQ(kreduce_chunk(2, 4, 3).offset, 2u);
}

}  // namespace
}  // namespace conflux::comm
