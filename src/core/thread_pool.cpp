#include "conflux/core/thread_pool.hpp"

namespace conflux {

namespace {
std::pair<std::size_t, std::size_t> chunk(std::size_t n, std::size_t parts, std::size_t i) {
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& fn) {
  if (workers_.empty() || n < 2) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    pending_ = workers_.size();
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr own_error;
  try {
    const auto [begin, end] = chunk(n, workers_.size() + 1, 0);
    fn(begin, end);
  } catch (...) {
    own_error = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (own_error) std::rethrow_exception(own_error);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_loop(std::size_t index) {
  std::size_t seen = 0;
  for (;;) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const auto* job = job_;
    const auto [begin, end] = chunk(job_size_, workers_.size() + 1, index);
    lock.unlock();
    std::exception_ptr error;
    try {
      if (begin < end) (*job)(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace conflux
