#pragma once
/// @file backoff.hpp
/// Growing sleeps between polls of something not ready yet: a waiting thread uses no core,
/// and still notices a quick answer quickly.

#include <algorithm>
#include <chrono>
#include <thread>

namespace conflux {

/// Sleeps `first`, then twice as long each time, up to `longest`; reset() starts over.
class Backoff {
 public:
  /// Pauses from `first` doubling up to `longest`.
  Backoff(std::chrono::microseconds first, std::chrono::microseconds longest) noexcept
      : first_(first), longest_(longest), next_(first) {}
  /// Sleeps the current pause and lengthens the next one.
  void pause() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(next_ * 2, longest_);
  }
  /// After progress: the next pause is short again.
  void reset() noexcept { next_ = first_; }

 private:
  std::chrono::microseconds first_, longest_, next_;
};

}  // namespace conflux
