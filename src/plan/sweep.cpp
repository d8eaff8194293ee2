#include "conflux/plan/sweep.hpp"

#include <cblas.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>

#include "conflux/core/crc32c.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/resource_limits.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/offload/step_times.hpp"
#include "conflux/train/device_choice.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::plan {
namespace {

using Clock = std::chrono::steady_clock;

// Collects the step times after the warm-up and stops training when enough were measured.
class StepRecorder final : public train::TrainingCallback {
 public:
  StepRecorder(int warmup, int steps) : warmup_(warmup), steps_(steps) {}
  void on_step_end(train::StepContext& context) override {
    ++seen_;
    if (seen_ == warmup_) start_ = Clock::now();
    if (seen_ > warmup_) {
      const offload::StepTimes& t = context.times();
      compute_ += t.compute;
      sync_ += t.sync;
      if (seen_ - warmup_ == steps_) {
        wall_ = std::chrono::duration<double>(Clock::now() - start_).count();
        context.request_stop();
      }
    }
  }
  bool complete() const { return seen_ - warmup_ == steps_; }
  // Means per measured step. Means, not medians: a throttled rank runs some steps at full
  // speed and pays for them in others' pauses, so only the mean shows the share's effect.
  double iteration_s() const { return (wall_ - sync_) / steps_; }
  double compute_s() const { return compute_ / steps_; }
  double sync_s() const { return sync_ / steps_; }

 private:
  int warmup_, steps_, seen_ = 0;
  Clock::time_point start_;
  double compute_ = 0, sync_ = 0, wall_ = 0;
};

// What one measured run gave.
struct Measured {
  StepRecorder recorder;
  std::vector<float> params;  // the model's parameters (for the serialisation timing)
  double iteration_s() const { return recorder.iteration_s(); }
  double compute_s() const { return recorder.compute_s(); }
  double sync_s() const { return recorder.sync_s(); }
  double step_s() const { return recorder.iteration_s() + recorder.sync_s(); }
};

// Trains `warmup` + `steps` steps of a fresh model on the point's trainers.
Measured measure(const Config& config, const comm::Communicator& trainers,
                 const data::SourceSplits& data, const train::DeviceChoice& device, int warmup,
                 int steps, std::size_t epoch_steps) {
  CONFLUX_REQUIRE(static_cast<std::size_t>(warmup + steps) < epoch_steps,
                  "an epoch of {} has only {} full steps of train.batch_size = {}; lower --warmup "
                  "or --steps, or the batch",
                  data.train->size(), epoch_steps, config.train().batch_size);
  const Logger silent;
  train::Trainer trainer(train::TrainerSetup{
      .config = config, .trainers = trainers, .data = data, .log = &silent, .device = device});
  Measured m{StepRecorder(warmup, steps), {}};
  train::TrainingCallback* callbacks[] = {&m.recorder};
  trainer.run(callbacks);
  CONFLUX_CHECK(m.recorder.complete(), "the profile run stopped before its {} steps", steps);
  const auto params = trainer.model().params();
  m.params.assign(params.begin(), params.end());
  return m;
}

// The config of one grid point: the profiled config with W trainers and batch W*B, nothing
// that writes files or evaluates; on a GPU no CPU share (nor the model budget it would set).
Config point_config(const Config& base, const SweepPoint& point, bool gpu) {
  const int workers = point.workers;
  return base.with({{"cluster.trainers", workers},
                    {"cluster.blas_threads", point.threads},
                    {"cluster.workers", 0},
                    {"train.batch_size", workers * point.batch},
                    {"train.epochs", 1},
                    {"train.eval", false},
                    {"train.log_every", 0},
                    {"data.offload_ratio", 0.0},
                    {"comm.strategy", "allreduce"},
                    {"comm.aggregators", 0},
                    {"comm.nonaggregator_batch_size", 0},
                    {"comm.stale_nonaggregators", false},
                    {"limits.memory_mb", gpu ? 0 : point.memory_mb},
                    {"profile.timeline", false}},
                   "profile point");
}

// Mean time to serialise the parameters once (copy into a send buffer plus its checksum, what
// a transfer to a peer or an object store costs this rank's CPU), repeated for `seconds`.
double serialisation_seconds(std::span<const float> params, double seconds) {
  std::vector<std::byte> buffer(params.size_bytes());
  const auto start = Clock::now();
  int repeats = 0;
  std::uint32_t crc = 0;
  do {
    std::memcpy(buffer.data(), params.data(), buffer.size());
    crc ^= crc32c(0, buffer);
    ++repeats;
  } while (std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  CONFLUX_CHECK(crc != 0xffffffffu || repeats > 0, "unreachable");  // keeps the work observable
  return elapsed / repeats;
}

// Mean time to build one batch of `batch` samples of the training split on one thread, as a
// data-service worker builds it (read, decode, augment, in the encoding it ships), repeated
// for `seconds` and at least 3 batches over consecutive batches of epoch 0.
BuildPoint build_seconds(const Config& config, const data::SourceSplits& data, int batch,
                         double seconds) {
  const data::SampleTransform transform = train::make_transform(config, *data.train);
  data::BatchBuilder builder(*data.train, transform, 1, train::sample_decoding(config, nullptr));
  const std::uint64_t seed = config.run().seed;
  const data::EpochPlan plan(seed, 0, data.train->size(), static_cast<std::size_t>(batch), 1);
  std::vector<std::byte> images(static_cast<std::size_t>(batch) * builder.bytes_per_sample());
  std::vector<model::Label> labels(static_cast<std::size_t>(batch));
  BuildPoint out{.batch = batch};
  const auto start = Clock::now();
  double elapsed = 0;
  std::size_t built = 0;  // samples: an epoch's last step may be short
  do {
    const auto samples = plan.samples(static_cast<std::size_t>(out.batches) % plan.steps(), 0);
    builder.build_train_encoded(samples, seed, 0, images.data(), labels.data());
    built += samples.size();
    ++out.batches;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds || out.batches < 3);
  out.seconds = elapsed * batch / static_cast<double>(built);  // per full batch
  return out;
}

// Rank 0 times the batch builds before any point (no throttle yet); the result is complete on
// rank 0 (which writes the profile). The others wait in a polled, sleeping reduction, so that
// they do not spin on the cores rank 0 is timing.
std::vector<BuildPoint> measure_builds(const SweepOptions& o, const data::SourceSplits& data) {
  std::vector<BuildPoint> out;
  if (o.world->rank() == 0) {
    for (const int batch : o.batch_sizes) {
      out.push_back(build_seconds(*o.config, data, batch, o.build_seconds));
      if (o.log != nullptr) {
        o.log->info("B={}: building a batch on one preprocessing thread takes {:.2f} ms", batch,
                    1e3 * out.back().seconds);
      }
    }
  }
  std::array<double, 1> done{0.0};
  o.world->allreduce_sum(std::span<double>(done), std::chrono::hours(1));
  return out;
}

void check_grid(const SweepOptions& o) {
  CONFLUX_REQUIRE(!o.worker_counts.empty() && !o.memory_mb.empty() && !o.batch_sizes.empty(),
                  "conflux profile needs at least one value each for --workers, --memory and "
                  "--batch");
  for (int w : o.worker_counts) {
    CONFLUX_REQUIRE(w >= 1 && w <= o.world->size(),
                    "--workers {} is outside 1..{} (the ranks this sweep was launched with)", w,
                    o.world->size());
  }
  for (int m : o.memory_mb) {
    CONFLUX_REQUIRE(m >= 128 && m <= 10240, "--memory {} MB is outside Lambda's 128..10240", m);
  }
  for (int b : o.batch_sizes) CONFLUX_REQUIRE(b >= 1, "--batch {} must be positive", b);
  for (int t : o.thread_counts) {
    CONFLUX_REQUIRE(t >= 1 && t <= 256, "--threads {} is outside 1..256", t);
  }
  CONFLUX_REQUIRE(o.steps >= 1 && o.warmup_steps >= 0, "--steps must be ≥ 1 and --warmup ≥ 0");
}

// What every point of one sweep shares.
struct SweepContext {
  const SweepOptions& options;
  const data::SourceSplits& data;
  std::optional<ResourceLimits>& limits;  // created at the first point, resized after
  train::DeviceChoice device{};           // of the point's trainers
};

// Runs one point on a trainer of it (under the point's limits) and fills its measurements;
// false when it ran out of memory under the cap.
bool measure_point(const SweepContext& ctx, const comm::Communicator& trainers, SweepPoint& point,
                   double& gradient_mb) {
  const SweepOptions& o = ctx.options;
  const Config& base = *o.config;
  const FunctionSize size{point.memory_mb, base.limits().mb_per_vcpu};
  // A GPU trainer is not throttled: its host is not a Lambda-like share, and a data-segment
  // cap would refuse the CUDA runtime's mappings.
  const bool gpu = ctx.device.device == train::ComputeDevice::kGpu;
  const Config config = point_config(base, point, gpu);
  bool fitted = true;
  try {
    if (gpu) {
      // nothing to size: see above
    } else if (ctx.limits) {
      ctx.limits->resize(size);
    } else {
      ctx.limits.emplace(size, std::chrono::duration<double>(base.limits().cpu_period_ms / 1000));
    }
    // A short calibration run says how many steps fill --seconds: a throttled rank runs in
    // bursts of one period, so a mean needs many periods to settle.
    const std::size_t epoch_steps =
        ctx.data.train->size() / (static_cast<std::size_t>(point.workers) * point.batch);
    const Measured calibration = measure(config, trainers, ctx.data, ctx.device, o.warmup_steps,
                                         std::min<int>(10, o.steps), epoch_steps);
    std::array<double, 1> step_s{calibration.step_s()};
    trainers.allreduce_sum(std::span<double>(step_s), std::chrono::hours(1));
    const double mean_step = std::max(step_s[0] / point.workers, 1e-6);
    const int wanted = std::max(o.steps, static_cast<int>(o.min_seconds / mean_step) + 1);
    const int steps = static_cast<int>(
        std::min<std::size_t>(static_cast<std::size_t>(wanted), epoch_steps - o.warmup_steps - 1));
    const Measured m =
        measure(config, trainers, ctx.data, ctx.device, o.warmup_steps, steps, epoch_steps);
    point.steps = steps;
    point.iteration_s = m.iteration_s();
    point.compute_s = m.compute_s();
    point.sync_s = m.sync_s();
    point.transfer_s = serialisation_seconds(m.params, o.transfer_seconds);
    if (!gpu) {
      const CpuThrottleStats used = ctx.limits->throttle().stats();
      point.cpu_share_used = used.cpu_seconds / used.wall_seconds;
    }
    gradient_mb = 4e-6 * static_cast<double>(m.params.size());
  } catch (const std::bad_alloc&) {
    fitted = false;
  }
  if (ctx.limits) ctx.limits->resize({10240, base.limits().mb_per_vcpu});  // between points
  return fitted;
}

// The mean over the point's trainers (idle ranks add zeros), on every rank; the gradient size
// as rank 0 measured it.
void average_point(const comm::Communicator& world, SweepPoint& point, bool out_of_memory,
                   double& gradient_mb) {
  std::array<double, 5> sum{point.iteration_s, point.compute_s, point.sync_s, point.transfer_s,
                            out_of_memory ? 1.0 : 0.0};
  world.allreduce_sum(std::span<double>(sum), std::chrono::hours(1));
  point.out_of_memory = sum[4] > 0;
  point.iteration_s = sum[0] / point.workers;
  point.compute_s = sum[1] / point.workers;
  point.sync_s = sum[2] / point.workers;
  point.transfer_s = sum[3] / point.workers;
  std::array<double, 1> gradient{world.rank() == 0 ? gradient_mb : 0.0};
  world.allreduce_sum(std::span<double>(gradient), std::chrono::hours(1));
  gradient_mb = gradient[0];
}

void log_point(const Logger& log, const SweepPoint& point, double mb_per_vcpu) {
  if (point.out_of_memory) {
    log.warn("W={} M={} MB B={} T={}: out of memory under the cap", point.workers, point.memory_mb,
             point.batch, point.threads);
    return;
  }
  log.info(
      "W={} M={} MB ({:.2f} vCPU) B={}{}: iteration {:.2f} ms (compute {:.2f}), sync {:.2f} ms, "
      "serialise {:.3f} ms; CPU used {:.2f} vCPU",
      point.workers, point.memory_mb, FunctionSize{point.memory_mb, mb_per_vcpu}.cpu_share(),
      point.batch, point.threads == 1 ? std::string() : fmt::format(" T={}", point.threads),
      1e3 * point.iteration_s, 1e3 * point.compute_s, 1e3 * point.sync_s, 1e3 * point.transfer_s,
      point.cpu_share_used);
}

}  // namespace

Sweep run_sweep(const SweepOptions& o) {
  check_grid(o);
  const Config& base = *o.config;
  const comm::Communicator& world = *o.world;
  const std::vector<int> thread_counts =
      o.thread_counts.empty() ? std::vector<int>{base.cluster().blas_threads} : o.thread_counts;
  const data::SourceSplits data = train::open_training_data(base);
  Sweep sweep;
  sweep.config_name = base.run().name;
  sweep.dataset = base.data().dataset;
  sweep.epoch_samples = data.train->size();
  sweep.mb_per_vcpu = base.limits().mb_per_vcpu;
  sweep.builds = measure_builds(o, data);
  std::optional<ResourceLimits> limits;
  SweepContext ctx{o, data, limits};
  for (const int threads : thread_counts) {
    // The points must compute as `conflux train` will (train_job.cpp sets the same): OpenBLAS
    // otherwise starts one thread per core, and the profile would time a rank that uses more
    // CPU than cluster.blas_threads gives it in training (and than the plan assumes).
    openblas_set_num_threads(threads);
    for (const int workers : o.worker_counts) {
      // Ranks beyond W sit the point out on a polled wait, not a spinning barrier.
      const bool active = world.rank() < workers;
      const comm::Communicator trainers = world.split(active ? 0 : 1, world.rank());
      // The trainers compute where `conflux train` puts them (train.device): on a GPU the
      // profile measures its compute ceiling and the rate its own preprocessing feeds it.
      ctx.device = active ? train::choose_device(base, trainers, nullptr) : train::DeviceChoice{};
      if (world.rank() == 0) {
        sweep.device = ctx.device.device == train::ComputeDevice::kGpu ? "gpu" : "cpu";
        if (o.log != nullptr && sweep.device == "gpu") {
          o.log->info(
              "W={}: trainers compute on {} (not throttled: --memory only labels the "
              "points)",
              workers, ctx.device.description);
        }
      }
      for (const int memory : o.memory_mb) {
        for (const int batch : o.batch_sizes) {
          SweepPoint point{
              .workers = workers, .memory_mb = memory, .batch = batch, .threads = threads};
          const bool fitted = !active || measure_point(ctx, trainers, point, sweep.gradient_mb);
          average_point(world, point, !fitted, sweep.gradient_mb);
          if (o.log != nullptr && world.rank() == 0) log_point(*o.log, point, sweep.mb_per_vcpu);
          sweep.points.push_back(point);
        }
      }
    }
  }
  return sweep;
}

}  // namespace conflux::plan
