#include "conflux/data/service/batch_loader.hpp"

#include <algorithm>
#include <tuple>

#include "conflux/core/backoff.hpp"
#include "conflux/core/elapsed.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {

namespace {

using Clock = std::chrono::steady_clock;

// Whether batches carry pixels: the consumer asked for them and the transform makes them.
bool delivers_pixels(const BatchLoaderOptions& o) {
  return o.pixel_batches && image_encoding(*o.transform) == ImageEncoding::kPixels;
}

WorkerClientOptions client_options(const BatchLoaderOptions& o, std::size_t max_samples) {
  WorkerClientOptions c = o.client;
  c.transform = o.transform;
  c.max_samples = max_samples;
  c.trainer = o.trainer;
  c.deliver_pixels = delivers_pixels(o);
  c.pixel_memory = o.pixel_memory;
  return c;
}

// Bytes a batch in the window holds per sample: the images (floats, or pixels), the label and
// the index, and for pixel answers normalised here the received pixels too (counted for every
// slot, as any may be remote).
std::size_t batch_bytes_per_sample(const BatchLoaderOptions& o) {
  const std::size_t values = o.transform->output_shape().size();
  const std::size_t tail = sizeof(model::Label) + sizeof(std::uint32_t);
  if (delivers_pixels(o)) return values + tail;
  const bool staged =
      !o.client.worker_ranks.empty() && image_encoding(*o.transform) == ImageEncoding::kPixels;
  return values * sizeof(float) + (staged ? values : 0) + tail;
}

}  // namespace

const char* origin_name(BatchOrigin origin) noexcept {
  switch (origin) {
    case BatchOrigin::kLocal:
      return "local";
    case BatchOrigin::kWorker:
      return "worker";
    case BatchOrigin::kFallback:
      return "fallback";
  }
  return "?";
}

BatchLoader::BatchLoader(BatchLoaderOptions options)
    : options_(std::move(options)),
      split_(options_.global_batch, options_.trainers, options_.aggregators,
             options_.nonaggregator_batch),
      steps_per_epoch_((options_.source->size() + options_.global_batch - 1) /
                       options_.global_batch),
      max_samples_(split_.max_batch(options_.trainer)),
      batch_bytes_(max_samples_ * batch_bytes_per_sample(options_)),
      producer_(*options_.source, *options_.transform,
                {.threads = options_.threads,
                 .seed = options_.seed,
                 .decoding = options_.decoding,
                 .cache_bytes = options_.cache_bytes,
                 .pixels = delivers_pixels(options_),
                 .timeline = options_.timeline}),
      client_(client_options(options_, max_samples_)),
      next_epoch_(options_.start_epoch),
      next_step_(options_.start_step) {
  if (next_step_ >= steps_per_epoch_) {  // a checkpoint taken after an epoch's last step
    next_step_ = 0;
    ++next_epoch_;
  }
  stats_.bound_bytes_in_flight =
      batch_bytes_ *
      static_cast<std::size_t>(options_.prefetch + options_.client.credits * client_.workers());
}

BatchLoader::~BatchLoader() = default;

const EpochPlan& BatchLoader::plan(std::uint32_t epoch) {
  auto it = plans_.find(epoch);
  if (it != plans_.end()) return it->second;
  return plans_.try_emplace(epoch, options_.seed, epoch, options_.source->size(), split_)
      .first->second;
}

void BatchLoader::build_locally(Slot& slot, bool urgent) {
  slot.source = Source::kLocal;
  slot.batch.worker = -1;
  if (slot.batch.origin != BatchOrigin::kFallback) slot.batch.origin = BatchOrigin::kLocal;
  producer_.submit(slot.batch, plan(slot.batch.epoch).samples(slot.batch.step, options_.trainer),
                   urgent);
}

void BatchLoader::fill_window() {
  while (window_.size() < static_cast<std::size_t>(options_.prefetch) &&
         next_epoch_ < static_cast<std::uint32_t>(options_.epochs)) {
    std::unique_ptr<Slot> slot;
    if (spare_.empty()) {
      slot = std::make_unique<Slot>();
      if (options_.pixel_memory != nullptr) slot->batch.pixels = PixelBuffer(options_.pixel_memory);
    } else {
      slot = std::move(spare_.back());
      spare_.pop_back();
    }
    slot->batch.epoch = next_epoch_;
    slot->batch.step = next_step_;
    slot->batch.step_samples = plan(next_epoch_).step_samples(next_step_);
    slot->batch.origin = BatchOrigin::kLocal;
    if (client_.workers() > 0 && options_.schedule != nullptr &&
        options_.schedule->next_is_remote()) {
      slot->source = Source::kUnassigned;
    } else {
      build_locally(*slot, false);
    }
    window_.push_back(std::move(slot));
    if (++next_step_ == steps_per_epoch_) {
      next_step_ = 0;
      ++next_epoch_;
    }
  }
  assign_unassigned();
}

void BatchLoader::assign_unassigned() {
  // Strictly in window order, so the credits are always held by batches needed sooner.
  for (auto& slot : window_) {
    if (slot->source != Source::kUnassigned) continue;
    const BatchRange range = plan(slot->batch.epoch).range(slot->batch.step, options_.trainer);
    if (!client_.request(slot->batch, range)) return;
    slot->source = Source::kRemote;
  }
}

void BatchLoader::wait_until_ready(Slot& slot) {
  Backoff backoff(std::chrono::microseconds(10), std::chrono::microseconds(1000));
  for (;;) {
    client_.progress();
    assign_unassigned();
    switch (slot.source) {
      case Source::kLocal: {
        // Wake now and then only to progress requests in flight; otherwise just wait.
        const auto wait = client_.requests_in_flight() > 0 ? std::chrono::microseconds(2000)
                                                           : std::chrono::microseconds(20000);
        if (producer_.wait(slot.batch, wait)) return;
        continue;
      }
      case Source::kRemote:
        switch (client_.poll(slot.batch)) {
          case WorkerClient::Arrival::kArrived: {
            const auto want = plan(slot.batch.epoch).samples(slot.batch.step, options_.trainer);
            CONFLUX_CHECK(std::equal(want.begin(), want.end(), slot.batch.samples.begin(),
                                     slot.batch.samples.end()),
                          "data service: worker {} built epoch {} step {} of trainer {} from "
                          "other samples than the plan's",
                          slot.batch.worker, slot.batch.epoch, slot.batch.step, options_.trainer);
            return;
          }
          case WorkerClient::Arrival::kTimedOut:
            slot.batch.origin = BatchOrigin::kFallback;
            build_locally(slot, true);
            continue;
          case WorkerClient::Arrival::kPending:
            break;
        }
        break;
      case Source::kUnassigned:
        if (!client_.any_live_worker()) {
          build_locally(slot, true);
          continue;
        }
        break;
    }
    // Waiting on MPI: sleep in short, growing pauses so the trainer's core stays free.
    backoff.pause();
  }
}

void BatchLoader::note_in_flight() {
  const std::size_t batches = window_.size() + client_.given_up();
  stats_.peak_batches_in_flight = std::max(stats_.peak_batches_in_flight, batches);
  stats_.peak_bytes_in_flight =
      std::max<std::uint64_t>(stats_.peak_bytes_in_flight, batches * batch_bytes_);
}

Batch& BatchLoader::next() {
  if (front_consumed_) {
    producer_.release(window_.front()->batch);
    spare_.push_back(std::move(window_.front()));
    window_.pop_front();
    front_consumed_ = false;
  }
  fill_window();
  CONFLUX_CHECK(!window_.empty(), "data service: trainer {} asked for a batch after the last",
                options_.trainer);
  note_in_flight();
  Slot& slot = *window_.front();
  const auto wait_start = SteadyClock::now();
  wait_until_ready(slot);
  // Attributed to where the batch came from in the end (a timed-out request counts as remote:
  // the wait was for the worker).
  (slot.batch.origin == BatchOrigin::kLocal ? wait_local_seconds_ : wait_remote_seconds_) +=
      seconds_since(wait_start);
  ++delivered_;
  front_consumed_ = true;
  switch (slot.batch.origin) {
    case BatchOrigin::kLocal:
      ++stats_.local;
      break;
    case BatchOrigin::kWorker:
      ++stats_.worker;
      break;
    case BatchOrigin::kFallback:
      ++stats_.fallback;
      break;
  }
  while (!plans_.empty() && plans_.begin()->first < slot.batch.epoch) plans_.erase(plans_.begin());
  return slot.batch;
}

void BatchLoader::finish() {
  for (auto& slot : window_) {
    if (slot->source == Source::kRemote) client_.abandon(slot->batch);
    slot->source = Source::kLocal;
  }
  client_.finish();
}

LoaderStats BatchLoader::stats() const {
  LoaderStats s = stats_;
  s.client = client_.stats();
  s.skipped = producer_.skipped();
  s.fetcher = producer_.fetcher_stats();
  return s;
}

double BatchLoader::offload_ratio() const {
  return options_.schedule != nullptr ? options_.schedule->ratio() : 0;
}

void BatchLoader::set_offload_ratio(double ratio) {
  CONFLUX_CHECK(options_.schedule != nullptr,
                "set_offload_ratio({}): this batch loader has no remote schedule", ratio);
  options_.schedule->set_ratio(ratio);
}

offload::PipelineCounters BatchLoader::pipeline_counters() const {
  offload::PipelineCounters c;
  std::tie(c.local_built, c.local_build_seconds) = producer_.built_and_seconds();
  c.delivered = delivered_;
  c.wait_local_seconds = wait_local_seconds_;
  c.wait_remote_seconds = wait_remote_seconds_;
  c.trainers = options_.trainers;
  c.workers = client_.worker_counters();
  return c;
}

}  // namespace conflux::data
