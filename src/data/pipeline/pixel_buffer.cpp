#include "conflux/data/pipeline/pixel_buffer.hpp"

#include <cstring>
#include <utility>

namespace conflux::data {

namespace {
// Whole cache lines, so that a copy engine or a vector loop never shares a line with another
// allocation.
constexpr std::size_t kAlignment = 64;
}  // namespace

PixelBuffer::PixelBuffer(PixelBuffer&& other) noexcept
    : memory_(other.memory_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

PixelBuffer& PixelBuffer::operator=(PixelBuffer&& other) noexcept {
  if (this != &other) {
    release();
    memory_ = other.memory_;
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

PixelBuffer::~PixelBuffer() {
  release();
}

void swap(PixelBuffer& a, PixelBuffer& b) noexcept {
  std::swap(a.memory_, b.memory_);
  std::swap(a.data_, b.data_);
  std::swap(a.size_, b.size_);
  std::swap(a.capacity_, b.capacity_);
}

void PixelBuffer::resize(std::size_t bytes) {
  if (bytes > capacity_) {
    auto* grown = static_cast<std::uint8_t*>(memory_->allocate(bytes, kAlignment));
    if (size_ > 0) std::memcpy(grown, data_, size_);
    release();
    data_ = grown;
    capacity_ = bytes;
  }
  size_ = bytes;
}

void PixelBuffer::release() noexcept {
  if (data_ != nullptr) memory_->deallocate(data_, capacity_, kAlignment);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

}  // namespace conflux::data
