#include "conflux/plan/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "conflux/core/error.hpp"

namespace conflux::plan {

std::string_view to_string(Target target) noexcept {
  return target == Target::kLambda ? "lambda" : "slurm";
}

std::string_view to_string(LambdaArch arch) noexcept {
  return arch == LambdaArch::kX86 ? "x86" : "arm";
}

CostModel::CostModel(CostModelOptions options) : options_(options) {
  CONFLUX_REQUIRE(options_.model != nullptr, "the cost model needs a performance model");
  const PerformanceModel& m = *options_.model;
  CONFLUX_REQUIRE(options_.epochs >= 1, "epochs must be at least 1, got {}", options_.epochs);
  CONFLUX_REQUIRE(options_.threads >= 1, "compute threads must be at least 1, got {}",
                  options_.threads);
  CONFLUX_REQUIRE(options_.worker_threads >= 1, "data-worker threads must be at least 1, got {}",
                  options_.worker_threads);
  CONFLUX_REQUIRE(m.epoch_samples >= 1, "the performance model ({}) has no training samples",
                  m.source);
  CONFLUX_REQUIRE(std::isfinite(m.mb_per_vcpu) && m.mb_per_vcpu > 0,
                  "mb_per_vcpu must be positive, got {}", m.mb_per_vcpu);
  for (const double v :
       {m.train.a, m.train.b, m.train.m, m.train.c, m.transfer.k1, m.transfer.k2}) {
    CONFLUX_REQUIRE(std::isfinite(v),
                    "the performance model ({}) has a non-finite coefficient: T_train = {} (B + "
                    "{}) / (M + {}) + {}, T_trans = {} M^{}",
                    m.source, m.train.a, m.train.b, m.train.m, m.train.c, m.transfer.k1,
                    m.transfer.k2);
  }
  for (const ThreadCountFit& f : m.more_threads) {
    for (const double v : {f.train.a, f.train.b, f.train.m, f.train.c, f.compute.a, f.compute.b,
                           f.compute.m, f.compute.c}) {
      CONFLUX_REQUIRE(std::isfinite(v),
                      "the performance model ({}) has a non-finite coefficient at {} threads",
                      m.source, f.threads);
    }
  }
  const PricesSection& p = options_.prices;
  for (const double v : {p.lambda_x86_gb_s, p.lambda_arm_gb_s, p.lambda_request, p.object_put,
                         p.object_get, p.slurm_core_hour, p.slurm_gpu_hour}) {
    CONFLUX_REQUIRE(std::isfinite(v) && v >= 0, "prices must be finite and >= 0, got {}", v);
  }
  CONFLUX_REQUIRE(std::isfinite(p.lambda_max_seconds) && p.lambda_max_seconds > 0,
                  "prices.lambda_max_seconds must be positive, got {}", p.lambda_max_seconds);
  for (const GpuRate& r : m.gpu.rates) {
    CONFLUX_REQUIRE(r.batch >= 1 && std::isfinite(r.ceiling_samples_s) && r.ceiling_samples_s > 0 &&
                        std::isfinite(r.local_samples_s) && r.local_samples_s > 0,
                    "the performance model ({}) has GPU rates at batch {} of {} samples/s (compute "
                    "ceiling) and {} samples/s (local input); both must be positive",
                    m.source, r.batch, r.ceiling_samples_s, r.local_samples_s);
  }
  CONFLUX_REQUIRE(!m.gpu.present() || options_.target == Target::kSlurm,
                  "the performance model ({}) describes GPU trainers: they are planned on the "
                  "SLURM target (--target slurm, priced with prices.slurm_gpu_hour)",
                  m.source);
  if (options_.target == Target::kLambda) {
    CONFLUX_REQUIRE(options_.s3 != nullptr,
                    "the Lambda target needs the S3 transfer table (lambda-s3-transfer)");
    CONFLUX_REQUIRE(std::isfinite(m.gradient_mb) && m.gradient_mb > 0,
                    "the performance model ({}) has gradient size {} MB; K-Reduce needs a "
                    "positive size",
                    m.source, m.gradient_mb);
  }
}

void CostModel::check_shape(const Candidate& c) const {
  CONFLUX_REQUIRE(c.workers >= 1, "workers must be at least 1, got {}", c.workers);
  CONFLUX_REQUIRE(c.aggregators >= 1 && c.aggregators <= c.workers,
                  "aggregators K = {} must lie in 1..W = {}", c.aggregators, c.workers);
  CONFLUX_REQUIRE(c.aggregator_batch >= 1 && c.nonaggregator_batch >= 1,
                  "batch sizes must be at least 1, got Ba = {}, Bn = {}", c.aggregator_batch,
                  c.nonaggregator_batch);
  CONFLUX_REQUIRE(c.memory_mb >= 1, "memory must be at least 1 MB, got {}", c.memory_mb);
  // With K = W there are no non-aggregators; one batch keeps a candidate's spelling unique.
  CONFLUX_REQUIRE(c.aggregators < c.workers || c.nonaggregator_batch == c.aggregator_batch,
                  "with K = W = {} every worker aggregates: the non-aggregator batch {} must "
                  "equal the aggregator batch {}",
                  c.workers, c.nonaggregator_batch, c.aggregator_batch);
  CONFLUX_REQUIRE(c.data_workers >= 0, "data workers must be >= 0, got {}", c.data_workers);
  CONFLUX_REQUIRE(c.threads >= 0, "threads must be >= 0 (0: the config's), got {}", c.threads);
  CONFLUX_REQUIRE(c.data_workers == 0 || options_.target == Target::kSlurm,
                  "data-service workers are planned on the SLURM target only (a Lambda function "
                  "preprocesses its own batches), got D = {}",
                  c.data_workers);
  CONFLUX_REQUIRE(c.data_workers == 0 || options_.model->prices_input(),
                  "the performance model ({}) has no input-pipeline cost (a profile of an older "
                  "conflux profile): it cannot price D = {} data workers; profile and fit again",
                  options_.model->source, c.data_workers);
  CONFLUX_REQUIRE(c.gpu == options_.model->gpu.present(),
                  "the performance model ({}) describes {} trainers, but the configuration has {} "
                  "trainers",
                  options_.model->source, options_.model->gpu.present() ? "GPU" : "CPU",
                  c.gpu ? "GPU" : "CPU");
  CONFLUX_REQUIRE(options_.target != Target::kSlurm || c.aggregators == c.workers,
                  "the SLURM target synchronises with MPI allreduce: K must equal W = {}, got "
                  "K = {}",
                  c.workers, c.aggregators);
}

void CostModel::validate(const Candidate& c, const PlanSpace& space) const {
  check_shape(c);
  CONFLUX_REQUIRE(c.workers >= space.min_workers && c.workers <= space.max_workers,
                  "W = {} workers lies outside {}..{}", c.workers, space.min_workers,
                  space.max_workers);
  CONFLUX_REQUIRE(c.memory_mb >= space.min_memory_mb && c.memory_mb <= space.max_memory_mb,
                  "memory {} MB lies outside {}..{} MB", c.memory_mb, space.min_memory_mb,
                  space.max_memory_mb);
  // FasDL gives non-aggregators the larger batch: they skip the aggregation work.
  CONFLUX_REQUIRE(c.aggregators == c.workers || c.nonaggregator_batch >= c.aggregator_batch,
                  "the non-aggregator batch Bn = {} is smaller than the aggregator batch Ba = {}",
                  c.nonaggregator_batch, c.aggregator_batch);
  const int threads = threads_of(c);
  CONFLUX_REQUIRE(space.thread_counts.empty()
                      ? threads == options_.threads
                      : std::find(space.thread_counts.begin(), space.thread_counts.end(),
                                  threads) != space.thread_counts.end(),
                  "{} BLAS threads lie outside the space's thread counts", threads);
  CONFLUX_REQUIRE(c.data_workers <= space.max_data_workers,
                  "D = {} data workers lies outside 0..{}", c.data_workers, space.max_data_workers);
}

std::uint64_t CostModel::samples_per_iteration(const Candidate& c) noexcept {
  const auto k = static_cast<std::uint64_t>(c.aggregators);
  const auto rest = static_cast<std::uint64_t>(c.workers - c.aggregators);
  return k * static_cast<std::uint64_t>(c.aggregator_batch) +
         rest * static_cast<std::uint64_t>(c.nonaggregator_batch);
}

std::uint64_t CostModel::iterations(const Candidate& c) const noexcept {
  const std::uint64_t s = samples_per_iteration(c);
  if (options_.to_target != nullptr) return options_.to_target->steps(static_cast<double>(s));
  const std::uint64_t n = options_.model->epoch_samples;
  return static_cast<std::uint64_t>(options_.epochs) * ((n + s - 1) / s);
}

double CostModel::storage_cost_per_iteration(const Candidate& c) const noexcept {
  if (options_.target != Target::kLambda) return 0;
  const double w = c.workers;
  const double k = c.aggregators;
  // PUTs: every worker its K chunks, every aggregator its merged chunk. GETs: every aggregator
  // the other W - 1 copies of its chunk, every worker the K merged chunks.
  return (w * k + k) * options_.prices.object_put +
         (k * (w - 1) + w * k) * options_.prices.object_get;
}

double CostModel::gb_second_price() const noexcept {
  return options_.arch == LambdaArch::kX86 ? options_.prices.lambda_x86_gb_s
                                           : options_.prices.lambda_arm_gb_s;
}

int CostModel::cores(int memory_mb) const noexcept {
  return static_cast<int>(std::ceil(memory_mb / options_.model->mb_per_vcpu));
}

double CostModel::compute_cap_mb(int threads) const noexcept {
  return resolved(threads) * options_.model->mb_per_vcpu;
}

double CostModel::train_seconds(double batch, double memory_mb, int threads) const noexcept {
  const int t = resolved(threads);
  return options_.model->train_at(t).seconds(batch, std::min(memory_mb, compute_cap_mb(t)));
}

double CostModel::compute_seconds(double batch, double memory_mb, int threads) const noexcept {
  const int t = resolved(threads);
  return options_.model->compute_at(t).seconds(batch, std::min(memory_mb, compute_cap_mb(t)));
}

double CostModel::data_workers_seconds(int trainers, int data_workers,
                                       double batch) const noexcept {
  return trainers * options_.model->input.seconds(batch) /
         (static_cast<double>(data_workers) * options_.worker_threads);
}

CostModel::StepParts CostModel::step_parts(int trainers, int data_workers, double batch,
                                           double memory_mb, int threads) const noexcept {
  const double local = train_seconds(batch, memory_mb, threads);
  if (data_workers == 0) return {local, 0, 0};
  const double delta = local - std::min(compute_seconds(batch, memory_mb, threads), local);
  return {local, delta, data_workers_seconds(trainers, data_workers, batch)};
}

CostModel::Offload CostModel::split_at(const StepParts& s, double ratio) noexcept {
  if (ratio <= 0) return {0, s.local, 0, s.local};
  // The trainer takes local - r delta, the workers r x.
  return {ratio, std::max(s.local - ratio * s.delta, ratio * s.x), ratio * s.x, s.local};
}

CostModel::Offload CostModel::offload(int trainers, int data_workers, double batch,
                                      double memory_mb, int threads) const noexcept {
  const StepParts s = step_parts(trainers, data_workers, batch, memory_mb, threads);
  if (data_workers == 0 || s.delta <= 0) return split_at(s, 0);
  // The step is least where the trainer's and the workers' times meet.
  return split_at(s, std::min(1.0, s.local / (s.x + s.delta)));
}

CostModel::Offload CostModel::offload_at(double ratio, int trainers, int data_workers, double batch,
                                         double memory_mb, int threads) const noexcept {
  const StepParts s = step_parts(trainers, data_workers, batch, memory_mb, threads);
  return split_at(s, data_workers == 0 ? 0 : ratio);
}

CostModel::GpuFeed CostModel::gpu_feed(int trainers, int data_workers, int batch,
                                       double memory_mb) const {
  const PerformanceModel& m = *options_.model;
  const GpuRate* r = m.gpu.at(batch);
  if (r == nullptr) {
    std::string profiled;
    for (const GpuRate& g : m.gpu.rates)
      profiled += fmt::format("{}{}", profiled.empty() ? "" : ", ", g.batch);
    CONFLUX_INPUT_ERROR("the performance model ({}) has no GPU rates at batch {} (profiled: {})",
                        m.source, batch, profiled.empty() ? "none" : profiled);
  }
  const double b = batch;
  GpuFeed f;
  // The gradient sync does not overlap the GPU's compute, but the input keeps being built
  // during it: the sync lowers the ceiling, not the input rate.
  f.ceiling = b / (b / r->ceiling_samples_s + m.sync.seconds(trainers, memory_mb));
  f.local = r->local_samples_s;
  if (data_workers > 0) {
    f.workers = static_cast<double>(data_workers) / trainers * options_.worker_threads * b /
                m.input.seconds(b);
  }
  const double input = f.local + f.workers;
  f.input_bound = input < f.ceiling;
  f.rate = std::min(f.ceiling, input);
  // The trainer builds what it can and the workers the rest: the least offloading that keeps
  // the GPU busy (as the auto controller seeks), or all they can build when it is starved.
  f.ratio = f.workers > 0 ? std::clamp(1 - f.local / f.rate, 0.0, 1.0) : 0.0;
  return f;
}

Prediction CostModel::predict_gpu(const Candidate& c) const {
  const PricesSection& p = options_.prices;
  Prediction r;
  r.samples_per_iteration = samples_per_iteration(c);
  r.iterations = iterations(c);
  const GpuFeed f = gpu_feed(c.workers, c.data_workers, c.aggregator_batch, c.memory_mb);
  const double b = c.aggregator_batch;
  r.train_s = b / options_.model->gpu.at(c.aggregator_batch)->ceiling_samples_s;
  r.comm_s = options_.model->sync.seconds(c.workers, c.memory_mb);
  r.local_s = b / std::min(f.ceiling, f.local);
  r.data_worker_s = f.workers > 0 ? f.ratio * b / f.workers : 0.0;
  r.offload_ratio = f.ratio;
  r.input_bound = f.input_bound;
  r.iteration_s = b / f.rate;
  r.aggregator_s = r.iteration_s;
  r.total_s = static_cast<double>(r.iterations) * r.iteration_s;
  const double hours = r.total_s / 3600;
  // A GPU's host cores are billed with its GPU-hour; the data workers' cores as core-hours.
  r.gpu_cost_usd = c.workers * hours * p.slurm_gpu_hour;
  r.compute_cost_usd =
      static_cast<double>(c.data_workers) * options_.worker_threads * hours * p.slurm_core_hour;
  r.cost_usd = r.gpu_cost_usd + r.compute_cost_usd;
  return r;
}

Prediction CostModel::predict(const Candidate& c) const {
  check_shape(c);
  if (c.gpu) return predict_gpu(c);
  const PerformanceModel& m = *options_.model;
  const PricesSection& p = options_.prices;
  const double w = c.workers;
  const double k = c.aggregators;
  const double mem = c.memory_mb;
  Prediction r;
  r.samples_per_iteration = samples_per_iteration(c);
  r.iterations = iterations(c);
  // MPI reduces the gradient in place: only a transfer through an object store serialises.
  r.transfer_s = options_.target == Target::kLambda ? m.transfer.seconds(mem) : 0.0;
  const int threads = threads_of(c);
  const Offload split = offload(c.workers, c.data_workers, c.aggregator_batch, mem, threads);
  const double train_a = split.seconds;
  r.offload_ratio = split.ratio;
  r.local_s = split.local_s;
  r.data_worker_s = split.workers_s;
  double comm_a = 0;
  double comm_n = 0;
  if (options_.target == Target::kLambda) {
    // K-Reduce: the gradient travels in K chunks of gradient_mb / K through the object store.
    const double chunk = m.gradient_mb / k;
    const double up = options_.s3->upload_seconds(mem, chunk);
    const double down = options_.s3->download_seconds(mem, chunk);
    // Aggregator: K chunk uploads + its merged chunk; the other W - 1 copies of its chunk + the
    // K merged chunks. A non-aggregator uses the previous iteration's merged model, so it
    // never waits for aggregation: K uploads and K downloads.
    comm_a = (k + 1) * up + (w - 1 + k) * down;
    comm_n = k * up + k * down;
  } else {
    comm_a = m.sync.seconds(c.workers, mem);
  }
  r.aggregator_s = train_a + r.transfer_s + comm_a;
  r.train_s = train_a;
  r.comm_s = comm_a;
  r.iteration_s = r.aggregator_s;
  if (c.aggregators < c.workers) {
    const double train_n = train_seconds(c.nonaggregator_batch, mem, threads);
    r.nonaggregator_s = train_n + r.transfer_s + comm_n;
    if (r.nonaggregator_s > r.aggregator_s) {
      r.iteration_s = r.nonaggregator_s;
      r.train_s = train_n;
      r.comm_s = comm_n;
    }
  }
  r.total_s = static_cast<double>(r.iterations) * r.iteration_s;
  if (options_.target == Target::kLambda) {
    r.compute_cost_usd = w * (mem / 1024) * r.total_s * gb_second_price();
    // A function runs at most lambda_max_seconds, so every worker is re-invoked that often.
    r.request_cost_usd = w * std::ceil(r.total_s / p.lambda_max_seconds) * p.lambda_request;
    r.storage_cost_usd = static_cast<double>(r.iterations) * storage_cost_per_iteration(c);
  } else {
    const double data_cores = static_cast<double>(c.data_workers) * options_.worker_threads;
    r.compute_cost_usd =
        (w * cores(c.memory_mb) + data_cores) * (r.total_s / 3600) * p.slurm_core_hour;
  }
  r.cost_usd = r.compute_cost_usd + r.request_cost_usd + r.storage_cost_usd;
  return r;
}

}  // namespace conflux::plan
