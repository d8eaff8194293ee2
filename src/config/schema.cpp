#include "conflux/config/schema.hpp"

#include <fmt/format.h>

#include <limits>

namespace conflux {
namespace {

constexpr double kIntMax = std::numeric_limits<int>::max();

KeySpec key(std::string path, ValueType type, std::optional<double> min, std::optional<double> max,
            std::string default_toml, std::string doc, std::vector<std::string> choices = {}) {
  return KeySpec{std::move(path),    type,          min, max, std::move(default_toml),
                 std::move(choices), std::move(doc)};
}

std::vector<KeySpec> make_keys() {
  using T = ValueType;
  std::vector<KeySpec> keys = {
      key("run.name", T::kString, {}, {}, R"("conflux")", "Name of the experiment, shown in logs."),
      key("run.dir", T::kString, {}, {}, R"("runs/{time}")",
          "Run directory for the resolved config, metrics and model; `{time}` becomes the "
          "launch date-time (agreed by all ranks), `{name}` the run name."),
      key("run.seed", T::kInt, 0, kIntMax, "42",
          "Seed of everything random: weight init, epoch order, augmentation."),
      key("cluster.trainers", T::kInt, 1, 65536, "1",
          "Number of trainer ranks; the first ranks of MPI_COMM_WORLD train."),
      key("cluster.workers", T::kInt, -1, 65536, "-1",
          "Number of preprocessing-worker ranks; -1 means all ranks that are not trainers."),
      key("cluster.preprocess_threads", T::kInt, 1, 256, "1",
          "Preprocessing threads per trainer rank."),
      key("cluster.blas_threads", T::kInt, 1, 256, "1",
          "OpenBLAS threads per rank (keep 1 when ranks share cores)."),
      key("cluster.peer_timeout_s", T::kFloat, 0.1, 86400, "600",
          "Longest wait for another rank before failing with an error naming it."),
      key("cluster.worker_threads", T::kInt, 1, 256, "1",
          "Preprocessing threads per worker rank (the data service)."),
      key("data.dataset", T::kString, {}, {}, "", "Dataset to train on.",
          {"mnist", "fashion-mnist", "cifar10"}),
      key("data.dir", T::kString, {}, {}, R"("")",
          "Directory holding mnist/, fashion-mnist/, cifar-10/; empty means $CONFLUX_DATA, "
          "else ../shared/data."),
      key("data.hdf5_file", T::kString, {}, {}, R"("")",
          "Read the dataset from this HDF5 file (made by `conflux data convert`) instead of "
          "the original files."),
      key("data.train_limit", T::kInt, 0, kIntMax, "0",
          "Use only the first N training samples (0 = all); for quick tests."),
      key("data.test_limit", T::kInt, 0, kIntMax, "0",
          "Use only the first N test samples (0 = all)."),
      key("data.offload_ratio", T::kFloatOrAuto, 0, 1, "0.0",
          "Fraction of each trainer's batches built by worker ranks (the rest by its own "
          "preprocessing threads); changeable at run time, never changes the trained model. "
          "\"auto\": the profiler chooses each trainer's ratio and keeps adjusting it."),
      key("data.offload_ratios", T::kFloatList, 0, 1, "[]",
          "Per-trainer offload ratios (one per trainer); empty = data.offload_ratio for all."),
      key("data.prefetch_batches", T::kInt, 1, 1024, "4",
          "Batches a trainer prepares ahead (local or requested from workers); bounds its "
          "memory in flight."),
      key("data.worker_credits", T::kInt, 1, 64, "2",
          "Most requests a trainer has outstanding at one worker (back-pressure)."),
      key("data.worker_timeout_s", T::kFloat, 0.001, 86400, "30",
          "A worker that has not answered a request within this time is skipped: the trainer "
          "builds the batch itself and drops the late answer."),
      key("data.worker_backoff_s", T::kFloat, 0, 86400, "10",
          "How long a trainer sends nothing to a worker that missed the deadline."),
      key("data.worker_send_buffers", T::kInt, 1, 64, "2",
          "Batches a worker holds while sending (bounds its memory in flight)."),
      key("data.audit", T::kBool, {}, {}, "false",
          "Record the samples every trainer consumed and check each sample of each epoch was "
          "used exactly once (writes audit-trainer<t>.csv in the run directory)."),
      key("transform.pad", T::kInt, 0, 64, "0", "Zero padding added on each side before cropping."),
      key("transform.crop", T::kInt, 0, 4096, "0",
          "Random crop size (square); 0 = no crop, the image keeps its size."),
      key("transform.hflip", T::kBool, {}, {}, "false", "Random horizontal flip with p = 0.5."),
      key("transform.mean", T::kFloatList, -1e6, 1e6, "[0.0]",
          "Per-channel mean subtracted after scaling pixels to [0, 1] (1 or C values)."),
      key("transform.std", T::kFloatList, 1e-12, 1e6, "[1.0]",
          "Per-channel standard deviation divided by after the mean (1 or C values, > 0)."),
      key("transform.resized_crop", T::kInt, 0, 4096, "0",
          "Random resized crop (bilinear) to this square size; 0 = off; excludes pad/crop."),
      key("transform.resized_crop_scale_min", T::kFloat, 1e-6, 1, "0.08",
          "Smallest area fraction of a resized crop."),
      key("transform.resized_crop_scale_max", T::kFloat, 1e-6, 1, "1.0",
          "Largest area fraction of a resized crop."),
      key("transform.resized_crop_ratio_min", T::kFloat, 1e-3, 1e3, "0.75",
          "Smallest aspect ratio (w/h) of a resized crop."),
      key("transform.resized_crop_ratio_max", T::kFloat, 1e-3, 1e3, "1.3333333",
          "Largest aspect ratio (w/h) of a resized crop."),
      key("transform.rotation_degrees", T::kFloat, 0, 180, "0.0",
          "Random rotation by U(-d, d) degrees, bilinear, zero fill; 0 = off."),
      key("transform.brightness", T::kFloat, 0, 1, "0.0",
          "Colour jitter: brightness factor U(1-b, 1+b); 0 = off."),
      key("transform.contrast", T::kFloat, 0, 1, "0.0",
          "Colour jitter: contrast factor U(1-c, 1+c); 0 = off."),
      key("transform.saturation", T::kFloat, 0, 1, "0.0",
          "Colour jitter: saturation factor U(1-s, 1+s), 3-channel images only; 0 = off."),
      key("transform.blur_kernel", T::kInt, 0, 63, "0",
          "Gaussian blur kernel size (odd); 0 = off."),
      key("transform.blur_sigma_min", T::kFloat, 1e-3, 100, "0.1", "Smallest blur sigma."),
      key("transform.blur_sigma_max", T::kFloat, 1e-3, 100, "2.0", "Largest blur sigma."),
      key("transform.blur_probability", T::kFloat, 0, 1, "0.5", "Chance a sample is blurred."),
      key("transform.cutout_size", T::kInt, 0, 4096, "0",
          "Cutout: side of a square set to 0 after normalisation; 0 = off."),
      key("transform.cutout_probability", T::kFloat, 0, 1, "1.0",
          "Chance a sample gets the cutout square."),
      key("transform.plugin", T::kString, {}, {}, R"("")",
          "Shared library with a user transform (see examples/plugins); loaded on every rank "
          "that preprocesses; empty = none."),
      key("transform.plugin_args", T::kString, {}, {}, R"("")",
          "Argument string handed to the plugin's create()."),
      key("train.epochs", T::kInt, 1, 1e6, "1", "Number of epochs."),
      key("train.batch_size", T::kInt, 1, 1 << 24, "128",
          "Global batch size, split evenly over the trainer ranks."),
      key("train.lr", T::kFloat, 0, 100, "0.01", "SGD learning rate."),
      key("train.lr_schedule", T::kString, {}, {}, R"("constant")",
          "Learning-rate schedule: constant, or cosine annealing from train.lr to 0 over the "
          "whole run.",
          {"constant", "cosine"}),
      key("train.warmup_steps", T::kInt, 0, kIntMax, "0",
          "Steps of linear warm-up from 0 to train.lr before the schedule."),
      key("train.momentum", T::kFloat, 0, 0.999999, "0.0", "SGD momentum."),
      key("train.weight_decay", T::kFloat, 0, 1, "0.0", "L2 weight decay added to gradients."),
      key("train.log_every", T::kInt, 0, kIntMax, "100",
          "Print a progress line every N steps on rank 0 (0 = only per epoch)."),
      key("train.eval", T::kBool, {}, {}, "true", "Evaluate on the test set after every epoch."),
      key("train.device", T::kString, {}, {}, R"("auto")",
          "Where trainer ranks compute: auto (a GPU when the node has one, else the CPU, said "
          "once), cpu, or gpu (an error without one).",
          {"auto", "cpu", "gpu"}),
      key("checkpoint.every_steps", T::kInt, 0, kIntMax, "0",
          "Write a checkpoint every N training steps (0 = not by steps)."),
      key("checkpoint.every_seconds", T::kFloat, 0, 1e7, "0",
          "Write a checkpoint when this many seconds passed since the last one (0 = not by "
          "time); decided by trainer 0 and agreed at a step boundary."),
      key("checkpoint.keep", T::kInt, 1, 100000, "3",
          "Keep the newest K checkpoints; older ones are deleted after a new one is durable."),
      key("checkpoint.dir", T::kString, {}, {}, R"("")",
          "Checkpoint directory; empty = <run.dir>/checkpoints. Must be visible to every "
          "trainer rank (a shared file system on clusters)."),
      key("checkpoint.resume", T::kString, {}, {}, R"("none")",
          "Where to start: none (from scratch), auto (the newest valid checkpoint in "
          "checkpoint.dir, else from scratch) or the path of a checkpoint file. "
          "`conflux train --resume X` sets it."),
      key("checkpoint.final", T::kBool, {}, {}, "true",
          "Also checkpoint after the last step, so that resuming a finished run only reports."),
      key("profile.enabled", T::kBool, {}, {}, "true",
          "Profile every step (data wait, compute, gradient sync, callbacks) and every worker "
          "(service time, busy fraction, queue depth); writes <run.dir>/profile.jsonl."),
      key("profile.initial_steps", T::kInt, 0, kIntMax, "5",
          "Warm-up steps before the start-up bottleneck measurement."),
      key("profile.steps", T::kInt, 1, kIntMax, "20",
          "Steps of the start-up bottleneck measurement (then the controller runs every "
          "profile.interval_s)."),
      key("profile.bottleneck_threshold", T::kFloat, 1, 100, "1.3",
          "The job is input-bound when the compute ceiling exceeds the local pipeline's rate "
          "by this factor (FastFlow's threshold)."),
      key("profile.interval_s", T::kFloat, 0.01, 3600, "0.5",
          "Profiling window: one profile.jsonl record and one controller decision per "
          "window."),
      key("profile.hysteresis", T::kFloat, 0, 1, "0.03",
          "The auto offload ratio moves only when its target differs by more than this."),
      key("profile.timeline", T::kBool, {}, {}, "true",
          "Write <run.dir>/timeline.json (Chrome trace / Perfetto): steps, waits, requests, "
          "checkpoints and decisions of every rank."),
      key("profile.timeline_max_events", T::kInt, 0, kIntMax, "200000",
          "Most timeline events kept per rank (later ones are counted and dropped)."),
      key("comm.strategy", T::kString, {}, {}, R"("allreduce")",
          "Gradient synchronisation among trainers: MPI allreduce, or K-Reduce (comm.aggregators "
          "ranks each reduce one chunk of the flattened gradient).",
          {"allreduce", "kreduce"}),
      key("comm.aggregators", T::kInt, 0, 65536, "0",
          "K-Reduce: number of aggregator trainers (the first K); 0 = every trainer (K = W)."),
      key("comm.nonaggregator_batch_size", T::kInt, 0, 1 << 24, "0",
          "K-Reduce: per-step batch of each non-aggregator trainer; 0 = the aggregators' batch "
          "(train.batch_size / cluster.trainers)."),
      key("comm.stale_nonaggregators", T::kBool, {}, {}, "false",
          "K-Reduce: non-aggregators do not wait for the step's merged gradient and apply it one "
          "step late (FasDL's one-step-stale model)."),
      key("limits.memory_mb", T::kInt, 0, 10240, "0",
          "Lambda-like limit per rank: memory cap in MB with a CPU share of memory_mb / "
          "limits.mb_per_vcpu; 0 = no limit. Lambda allows 128..10240."),
      key("limits.mb_per_vcpu", T::kFloat, 1, 1e6, "1769",
          "Memory that buys one vCPU (AWS Lambda: 1769 MB)."),
      key("limits.cpu_period_ms", T::kFloat, 1, 1000, "20",
          "CPU throttling period: each period the rank may use share x period of CPU time."),
      key("limits.ranks", T::kString, {}, {}, R"("all")", "Which ranks run under limits.memory_mb.",
          {"all", "trainers", "workers"}),
      key("prices.lambda_x86_gb_s", T::kFloat, 0, 1e6, "0.0000166667",
          "Lambda x86 price per GB-second (USD)."),
      key("prices.lambda_arm_gb_s", T::kFloat, 0, 1e6, "0.0000133334",
          "Lambda arm64 price per GB-second (USD)."),
      key("prices.lambda_request", T::kFloat, 0, 1e6, "0.0000002",
          "Lambda price per invocation (USD; 0.20 per million)."),
      key("prices.lambda_max_seconds", T::kFloat, 1, 1e6, "900",
          "Longest Lambda invocation; a longer job re-invokes every function this often."),
      key("prices.object_put", T::kFloat, 0, 1e6, "0.000005",
          "Object store price per PUT request (USD; S3 standard 0.005 per 1000)."),
      key("prices.object_get", T::kFloat, 0, 1e6, "0.0000004",
          "Object store price per GET request (USD; S3 standard 0.0004 per 1000)."),
      key("prices.slurm_core_hour", T::kFloat, 0, 1e6, "0.05", "SLURM price per core-hour (USD)."),
      key("prices.slurm_gpu_hour", T::kFloat, 0, 1e6, "2.0", "SLURM price per GPU-hour (USD)."),
      key("fault.worker", T::kInt, -1, 65536, "-1",
          "Fault injection for tests: index of the worker rank to misbehave; -1 = none."),
      key("fault.mode", T::kString, {}, {}, R"("delay")",
          "Fault injection: delay every answer by fault.delay_s, stop answering, or build "
          "fault.factor times slower.",
          {"delay", "stop", "slow"}),
      key("fault.factor", T::kFloat, 1, 1000, "2.0",
          "Fault injection (mode slow): how many times longer each build takes."),
      key("fault.delay_s", T::kFloat, 0, 86400, "1.0", "Fault injection: delay per answer."),
      key("fault.after", T::kInt, 0, kIntMax, "0",
          "Fault injection: the worker behaves for this many answers first."),
  };
  for (auto& k : keys) k.min_exclusive = (k.path == "train.lr");  // lr = 0 would not train
  return keys;
}

std::vector<LayerKeySpec> make_layer_keys() {
  using T = ValueType;
  const auto out = [](std::string doc) { return key("out", T::kInt, 1, 1 << 20, "", doc); };
  return {
      {"linear", {out("Output features.")}, "Fully connected layer y = x W^T + b."},
      {"conv2d",
       {out("Output channels."), key("kernel", T::kInt, 1, 64, "3", "Square kernel size."),
        key("stride", T::kInt, 1, 64, "1", "Stride."),
        key("padding", T::kInt, 0, 64, "0", "Zero padding on each side.")},
       "2-D convolution (im2col + OpenBLAS sgemm)."},
      {"maxpool",
       {key("kernel", T::kInt, 1, 64, "2", "Window size."),
        key("stride", T::kInt, 0, 64, "0", "Stride; 0 = same as the window.")},
       "Max pooling."},
      {"relu", {}, "Rectified linear unit."},
      {"flatten", {}, "Flattens [C, H, W] to [C*H*W] before linear layers."},
  };
}

std::string format_bound(double v, ValueType type) {
  if (v == kIntMax) return "inf";
  return type == ValueType::kInt ? fmt::format("{}", static_cast<long long>(v))
                                 : fmt::format("{}", v);
}

}  // namespace

const std::vector<KeySpec>& config_keys() {
  static const std::vector<KeySpec> keys = make_keys();
  return keys;
}

const std::vector<LayerKeySpec>& layer_keys() {
  static const std::vector<LayerKeySpec> keys = make_layer_keys();
  return keys;
}

const KeySpec* find_key(std::string_view path) {
  for (const auto& k : config_keys())
    if (k.path == path) return &k;
  return nullptr;
}

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "an integer";
    case ValueType::kFloat:
      return "a number";
    case ValueType::kBool:
      return "a boolean";
    case ValueType::kString:
      return "a string";
    case ValueType::kFloatList:
      return "a list of numbers";
    case ValueType::kFloatOrAuto:
      return "\"auto\" or a number";
  }
  return "a value";
}

std::string describe_expected(const KeySpec& spec) {
  std::string text(type_name(spec.type));
  if (!spec.choices.empty()) {
    text += " (one of";
    for (std::size_t i = 0; i < spec.choices.size(); ++i)
      text += fmt::format("{} \"{}\"", i ? "," : "", spec.choices[i]);
    text += ")";
  }
  if (spec.min && spec.max) {
    text += fmt::format(" in {}{}, {}]", spec.min_exclusive ? "(" : "[",
                        format_bound(*spec.min, spec.type), format_bound(*spec.max, spec.type));
  } else if (spec.min) {
    text += fmt::format(" >= {}", format_bound(*spec.min, spec.type));
  }
  if (spec.type == ValueType::kFloatList && spec.min) text.insert(0, "each entry of ");
  return text;
}

std::string config_reference_markdown() {
  std::string md = "| key | type and range | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : config_keys()) {
    md += fmt::format("| `{}` | {} | {} | {} |\n", k.path, describe_expected(k),
                      k.default_toml.empty() ? "**required**" : "`" + k.default_toml + "`", k.doc);
  }
  md +=
      "\n### `[[model.layers]]`\n\nThe model is a list of layer tables in order; each has a "
      "`type` and the keys of its type. The input shape comes from the dataset; the last layer "
      "must produce one output per class.\n\n| type | key | type and range | default | meaning "
      "|\n|---|---|---|---|---|\n";
  for (const auto& layer : layer_keys()) {
    md += fmt::format("| `{}` | | | | {} |\n", layer.type, layer.doc);
    for (const auto& k : layer.keys) {
      md +=
          fmt::format("| | `{}` | {} | {} | {} |\n", k.path, describe_expected(k),
                      k.default_toml.empty() ? "**required**" : "`" + k.default_toml + "`", k.doc);
    }
  }
  return md;
}

}  // namespace conflux
