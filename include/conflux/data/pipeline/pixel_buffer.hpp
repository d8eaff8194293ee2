#pragma once
/// @file pixel_buffer.hpp
/// Bytes of 8-bit images in memory from a chosen std::pmr::memory_resource: pinned host memory
/// on a GPU trainer, so that a batch is built or received (MPI_Irecv) into the very buffer its
/// upload reads. Unlike a std::pmr::vector, a move takes the memory and its resource along
/// (polymorphic allocators do not propagate), and growing does not zero-fill.

#include <cstddef>
#include <cstdint>
#include <memory_resource>

namespace conflux::data {

/// A move-only byte buffer owned together with the resource it came from.
class PixelBuffer {
 public:
  /// An empty buffer that allocates from `memory` (which must outlive it).
  explicit PixelBuffer(std::pmr::memory_resource* memory = std::pmr::new_delete_resource()) noexcept
      : memory_(memory) {}
  PixelBuffer(PixelBuffer&& other) noexcept;
  PixelBuffer& operator=(PixelBuffer&& other) noexcept;
  PixelBuffer(const PixelBuffer&) = delete;
  PixelBuffer& operator=(const PixelBuffer&) = delete;
  ~PixelBuffer();

  /// Makes the size `bytes`, keeping the first min(size(), bytes) bytes; new bytes are
  /// unspecified. Reallocates only to grow beyond capacity().
  void resize(std::size_t bytes);
  std::uint8_t* data() noexcept { return data_; }
  const std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  /// The resource the bytes come from.
  std::pmr::memory_resource* memory() const noexcept { return memory_; }
  friend void swap(PixelBuffer& a, PixelBuffer& b) noexcept;

 private:
  void release() noexcept;

  std::pmr::memory_resource* memory_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace conflux::data
