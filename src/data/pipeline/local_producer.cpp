#include "conflux/data/pipeline/local_producer.hpp"

#include <fmt/format.h>

#include "conflux/core/elapsed.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {

namespace {
// options.pixels, checked before the thread starts: only a transform that makes 8-bit images
// can deliver them.
bool pixel_output_checked(bool pixels, const SampleTransform& transform) {
  CONFLUX_CHECK(!pixels || transform.pixel_output(),
                "local producer: pixel batches asked for, but the training transform's output is "
                "not an 8-bit image");
  return pixels;
}
}  // namespace

LocalProducer::LocalProducer(const SampleSource& source, const SampleTransform& transform,
                             const ProducerOptions& options)
    : builder_(source, transform, options.threads, options.decoding),
      seed_(options.seed),
      pixels_(pixel_output_checked(options.pixels, transform)),
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
  const SampleBytes bytes = job.ticket ? fetcher_->take(*job.ticket) : SampleBytes{};
  if (!pixels_) {
    b.encoding = ImageEncoding::kFloat32;
    builder_.build_train(b.samples, seed_, b.epoch, b.images, b.labels, bytes);
    return;
  }
  // The 8-bit images, for a consumer that normalises them (the same bytes a worker ships).
  b.encoding = ImageEncoding::kPixels;
  b.pixels.resize(b.samples.size() * builder_.bytes_per_sample());
  b.labels.resize(b.samples.size());
  builder_.build_train_encoded(b.samples, seed_, b.epoch,
                               reinterpret_cast<std::byte*>(b.pixels.data()), b.labels.data(),
                               bytes);
}

FetcherStats LocalProducer::fetcher_stats() const {
  return fetcher_ ? fetcher_->stats() : FetcherStats{};
}

std::pair<std::uint64_t, double> LocalProducer::built_and_seconds() const {
  std::lock_guard lock(mutex_);
  return {built_, build_seconds_};
}

}  // namespace conflux::data
