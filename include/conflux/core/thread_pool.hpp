#pragma once
/// @file thread_pool.hpp
/// A fixed pool of threads that runs one parallel-for at a time (used by preprocessing).

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace conflux {

/// Runs `fn(begin, end)` over [0, n) split into contiguous chunks, one per thread; the calling
/// thread takes the first chunk. Threads sleep between calls. Exceptions are rethrown.
class ThreadPool {
 public:
  /// A pool of `threads` workers in total (the caller counts as one).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  /// Number of threads including the caller.
  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }
  /// Parallel for over [0, n); returns when every chunk is done.
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker_loop(std::size_t index);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_size_ = 0;
  std::size_t generation_ = 0;
  std::size_t pending_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace conflux
