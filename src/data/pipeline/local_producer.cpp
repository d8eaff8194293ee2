#include "conflux/data/pipeline/local_producer.hpp"

#include <fmt/format.h>

#include "conflux/core/elapsed.hpp"

namespace conflux::data {

LocalProducer::LocalProducer(const Dataset& dataset, const SampleTransform& transform, int threads,
                             std::uint64_t seed, telemetry::Timeline* timeline)
    : builder_(dataset, transform, threads),
      seed_(seed),
      timeline_(timeline),
      thread_([this] { run(); }) {}

LocalProducer::~LocalProducer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LocalProducer::submit(Batch& batch, std::span<const std::uint32_t> samples, bool urgent) {
  {
    std::lock_guard lock(mutex_);
    done_.erase(&batch);
    Job job{&batch, {samples.begin(), samples.end()}};
    if (urgent) {
      queue_.push_front(std::move(job));
    } else {
      queue_.push_back(std::move(job));
    }
  }
  wake_.notify_one();
}

bool LocalProducer::built(const Batch& batch) {
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  return done_.contains(&batch);
}

bool LocalProducer::wait(const Batch& batch, std::chrono::microseconds timeout) {
  std::unique_lock lock(mutex_);
  done_cv_.wait_for(lock, timeout, [&] { return error_ || done_.contains(&batch); });
  if (error_) std::rethrow_exception(error_);
  return done_.contains(&batch);
}

void LocalProducer::release(const Batch& batch) {
  std::lock_guard lock(mutex_);
  done_.erase(&batch);
}

void LocalProducer::run() {
  if (timeline_ != nullptr) timeline_->name_thread("local preprocessing");
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto start = SteadyClock::now();
    try {
      Batch& b = *job.batch;
      b.samples = std::move(job.samples);
      builder_.build_train(b.samples, seed_, b.epoch, b.images, b.labels);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      done_cv_.notify_all();
      return;
    }
    if (timeline_ != nullptr && timeline_->enabled()) {  // before the batch is handed over
      timeline_->span(
          "build batch", "data", start, SteadyClock::now(),
          fmt::format("{{\"epoch\": {}, \"step\": {}}}", job.batch->epoch, job.batch->step));
    }
    {
      std::lock_guard lock(mutex_);
      done_.insert(job.batch);
      ++built_;
      build_seconds_ += seconds_since(start);
    }
    done_cv_.notify_all();
  }
}

std::pair<std::uint64_t, double> LocalProducer::built_and_seconds() const {
  std::lock_guard lock(mutex_);
  return {built_, build_seconds_};
}

}  // namespace conflux::data
