#pragma once
/// @file batch_loader.hpp
/// A trainer's source of training batches, in plan order across epochs. It keeps a window of
/// upcoming batches in preparation; the trainer's remote schedule sends a share of them to the
/// data service's workers and the rest to the trainer's own preprocessing thread. A worker that
/// misses its deadline is replaced by a local build of the same batch, which is bit-identical
/// (docs/design.md invariant 2), so where a batch was built never changes the model.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <memory_resource>
#include <vector>

#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/data/pipeline/local_producer.hpp"
#include "conflux/data/service/worker_client.hpp"
#include "conflux/offload/ratio_control.hpp"
#include "conflux/offload/remote_schedule.hpp"
#include "conflux/telemetry/timeline.hpp"

namespace conflux::data {

/// Settings of a BatchLoader.
struct BatchLoaderOptions {
  const SampleSource* source = nullptr;        ///< training split
  const SampleTransform* transform = nullptr;  ///< training transform
  SampleDecoding decoding;                     ///< channels, on_corrupt
  std::size_t cache_bytes = 64 << 20;          ///< read-ahead bound (data.cache_mb)
  std::uint64_t seed = 0;                      ///< run.seed
  int epochs = 1;
  std::size_t global_batch = 0;  ///< train.batch_size
  int trainers = 1;
  int trainer = 0;                      ///< this trainer's index
  int aggregators = 0;                  ///< comm.aggregators (0: every trainer)
  std::size_t nonaggregator_batch = 0;  ///< comm.nonaggregator_batch_size (0: equal batches)
  int threads = 1;                      ///< local preprocessing threads
  int prefetch = 4;                     ///< batches in preparation at once
  /// Which batches go to the workers: the trainer's schedule, which outlives the loader (the
  /// loader reads and sets its ratio and advances its credit). Null: every batch is local.
  offload::RemoteSchedule* schedule = nullptr;
  std::uint32_t start_epoch = 0;  ///< first batch delivered: (start_epoch, start_step);
  std::size_t start_step = 0;     ///< start_step == steps per epoch means the next epoch
  /// The consumer normalises 8-bit images itself (a GPU trainer): when the transform's output
  /// is pixels, batches carry them (Batch::pixels) rather than floats, local and remote alike.
  bool pixel_batches = false;
  /// Where those pixels are built and received (pinned host memory on a GPU trainer); null:
  /// the heap. Must outlive the loader.
  std::pmr::memory_resource* pixel_memory = nullptr;
  WorkerClientOptions client;  ///< workers, credits, deadlines (shape fields are filled in)
  telemetry::Timeline* timeline = nullptr;  ///< records local builds; null: none
};

/// Counters of one trainer's batches.
struct LoaderStats {
  std::size_t local = 0;                    ///< built by this trainer as planned
  std::size_t worker = 0;                   ///< built by workers
  std::size_t fallback = 0;                 ///< built here after a worker missed its deadline
  std::size_t peak_batches_in_flight = 0;   ///< window + given-up requests, at most
  std::uint64_t peak_bytes_in_flight = 0;   ///< image bytes of those batches, at most
  std::uint64_t bound_bytes_in_flight = 0;  ///< the configured bound on that
  WorkerClientStats client;                 ///< data-service counters
  std::uint64_t skipped = 0;                ///< samples skipped as corrupt in local builds
  FetcherStats fetcher;                     ///< the local read-ahead
};

/// Delivers this trainer's batches in plan order.
class BatchLoader : public offload::RatioControl {
 public:
  explicit BatchLoader(BatchLoaderOptions options);
  ~BatchLoader() override;
  /// Steps per epoch.
  std::size_t steps_per_epoch() const noexcept { return steps_per_epoch_; }
  /// The next batch (epoch-major, then step); valid until the next call, and the caller's to
  /// consume (a GPU trainer takes its pixel buffer, leaving another). RuntimeError after the
  /// last batch of the last epoch.
  Batch& next();
  /// Says goodbye to the workers and collects late answers; call after the last batch, or
  /// earlier to stop (batches still in preparation are dropped).
  void finish();
  /// Counters so far.
  LoaderStats stats() const;

  double offload_ratio() const override;
  /// RuntimeError without a schedule (BatchLoaderOptions::schedule).
  void set_offload_ratio(double ratio) override;
  offload::PipelineCounters pipeline_counters() const override;

 private:
  enum class Source { kLocal, kRemote, kUnassigned };
  struct Slot {
    Batch batch;
    Source source = Source::kLocal;
  };
  void fill_window();
  void assign_unassigned();
  void build_locally(Slot& slot, bool urgent);
  void wait_until_ready(Slot& slot);
  const EpochPlan& plan(std::uint32_t epoch);
  void note_in_flight();

  BatchLoaderOptions options_;
  BatchSplit split_;
  std::size_t steps_per_epoch_ = 0;
  std::size_t max_samples_ = 0;  // largest batch of this trainer
  std::size_t batch_bytes_ = 0;  // images, labels and indices of such a batch
  std::map<std::uint32_t, EpochPlan> plans_;
  // The slots outlive the producer and the client below, which may still write into them.
  std::deque<std::unique_ptr<Slot>> window_;
  std::vector<std::unique_ptr<Slot>> spare_;  // recycled slots keep their buffers
  LocalProducer producer_;
  WorkerClient client_;
  bool front_consumed_ = false;
  std::uint32_t next_epoch_ = 0;  // the next batch to schedule
  std::size_t next_step_ = 0;
  LoaderStats stats_;
  std::uint64_t delivered_ = 0;
  double wait_local_seconds_ = 0;
  double wait_remote_seconds_ = 0;
};

}  // namespace conflux::data
