#include "conflux/data/pipeline/local_producer.hpp"

#include <fmt/format.h>

#include "conflux/core/elapsed.hpp"

namespace conflux::data {

LocalProducer::LocalProducer(const SampleSource& source, const SampleTransform& transform,
                             const ProducerOptions& options)
    : builder_(source, transform, options.threads, options.decoding),
      seed_(options.seed),
      timeline_(options.timeline),
      thread_([this] { run(); }) {
  if (source.info().streamed) fetcher_.emplace(source, options.cache_bytes);
}

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
    Job job{&batch, {samples.begin(), samples.end()}, std::nullopt};
    if (fetcher_) job.ticket = fetcher_->enqueue(samples);
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
      build(job);
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

void LocalProducer::build(Job& job) {
  Batch& b = *job.batch;
  b.samples = std::move(job.samples);
  if (!job.ticket) {
    builder_.build_train(b.samples, seed_, b.epoch, b.images, b.labels);
    return;
  }
  const SampleBytes bytes = fetcher_->take(*job.ticket);
  builder_.build_train(b.samples, seed_, b.epoch, b.images, b.labels, bytes);
}

FetcherStats LocalProducer::fetcher_stats() const {
  return fetcher_ ? fetcher_->stats() : FetcherStats{};
}

std::pair<std::uint64_t, double> LocalProducer::built_and_seconds() const {
  std::lock_guard lock(mutex_);
  return {built_, build_seconds_};
}

}  // namespace conflux::data
