// data::PixelBuffer: a move takes the bytes and their resource along, growing keeps the prefix,
// shrinking never reallocates, and every byte goes back to the resource it came from.

#include "conflux/data/pipeline/pixel_buffer.hpp"

#include <gtest/gtest.h>

#include <memory_resource>
#include <utility>

namespace conflux::data {
namespace {

// Heap memory that counts its live bytes.
class CountingMemory final : public std::pmr::memory_resource {
 public:
  std::size_t live = 0;
  std::size_t allocations = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    live += bytes;
    ++allocations;
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    live -= bytes;
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

TEST(PixelBuffer, GrowingKeepsThePrefixAndShrinkingKeepsTheMemory) {
  CountingMemory memory;
  {
    PixelBuffer b(&memory);
    b.resize(3);
    b.data()[0] = 7;
    b.data()[2] = 9;
    b.resize(100);
    EXPECT_EQ(b.data()[0], 7);
    EXPECT_EQ(b.data()[2], 9);
    EXPECT_EQ(memory.allocations, 2u);
    EXPECT_EQ(memory.live, 100u);  // the first allocation went back
    b.resize(10);
    EXPECT_EQ(b.size(), 10u);
    EXPECT_EQ(b.capacity(), 100u);
    EXPECT_EQ(memory.allocations, 2u);
  }
  EXPECT_EQ(memory.live, 0u);
}

TEST(PixelBuffer, MovesAndSwapsTakeTheResourceAlong) {
  CountingMemory a_memory, b_memory;
  PixelBuffer a(&a_memory), b(&b_memory);
  a.resize(8);
  b.resize(16);
  const std::uint8_t* a_bytes = a.data();
  swap(a, b);
  EXPECT_EQ(b.data(), a_bytes);
  EXPECT_EQ(b.memory(), &a_memory);
  EXPECT_EQ(a.memory(), &b_memory);
  PixelBuffer c = std::move(b);  // takes a_memory's bytes
  EXPECT_EQ(c.memory(), &a_memory);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
  c = std::move(a);        // c's old bytes go back to a_memory
  EXPECT_EQ(a_memory.live, 0u);
  EXPECT_EQ(b_memory.live, 16u);
  EXPECT_EQ(c.memory(), &b_memory);
}

}  // namespace
}  // namespace conflux::data
