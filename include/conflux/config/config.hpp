#pragma once
/// @file config.hpp
/// The validated, immutable experiment configuration: parsed once from TOML (toml++), with
/// `--set key=value` overrides applied, checked against the schema, then passed down as
/// `const Config&`.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "conflux/data/transform/transform_params.hpp"
#include "conflux/model/layer.hpp"

namespace conflux {

/// [run]
struct RunSection {
  std::string name;
  std::filesystem::path dir;  ///< resolved: {time} and {name} substituted
  std::uint64_t seed = 0;
};

/// [cluster]
struct ClusterSection {
  int trainers = 1;
  int workers = -1;  ///< -1: the remaining ranks
  int preprocess_threads = 1;
  int blas_threads = 1;
  double peer_timeout_s = 600;
  int worker_threads = 1;
};

/// [data]
struct DataSection {
  std::string dataset;
  std::filesystem::path dir;        ///< resolved ($CONFLUX_DATA or ../shared/data if unset)
  std::filesystem::path hdf5_file;  ///< empty: read the original files
  std::int64_t train_limit = 0;
  std::int64_t test_limit = 0;
  double offload_ratio = 0;
  bool offload_auto = false;          ///< offload_ratio = "auto": the profiler decides
  std::vector<float> offload_ratios;  ///< per trainer; empty = offload_ratio for all
  int prefetch_batches = 4;
  int worker_credits = 2;
  double worker_timeout_s = 30;
  double worker_backoff_s = 10;
  int worker_send_buffers = 2;
  bool audit = false;
  /// The offload ratio of trainer `t`.
  double offload_ratio_for(int t) const {
    return offload_ratios.empty() ? offload_ratio : offload_ratios[static_cast<std::size_t>(t)];
  }
};

/// [transform]
struct TransformSection : data::TransformParams {
  std::filesystem::path plugin;  ///< resolved to an absolute path; empty = none
  std::string plugin_args;
};

/// [train]
struct TrainSection {
  int epochs = 1;
  int batch_size = 128;
  double lr = 0.01;
  std::string lr_schedule = "constant";
  std::int64_t warmup_steps = 0;
  double momentum = 0;
  double weight_decay = 0;
  int log_every = 100;
  bool eval = true;
  std::string device = "auto";  ///< "auto", "cpu" or "gpu"
};

/// [checkpoint]
struct CheckpointSection {
  std::int64_t every_steps = 0;  ///< 0: not by steps
  double every_seconds = 0;      ///< 0: not by time
  int keep = 3;
  std::filesystem::path dir;    ///< resolved: <run.dir>/checkpoints when unset
  std::string resume = "none";  ///< "none", "auto" or a checkpoint file
  bool final = true;            ///< checkpoint after the last step too
};

/// [profile]: the step profiler, the offload controller and the timeline.
struct ProfileSection {
  bool enabled = true;
  std::int64_t initial_steps = 5;  ///< warm-up before the start-up measurement
  std::int64_t steps = 20;         ///< steps of the start-up measurement
  double bottleneck_threshold = 1.3;
  double interval_s = 0.5;  ///< profiling window and controller period
  double hysteresis = 0.03;
  bool timeline = true;
  std::int64_t timeline_max_events = 200000;
};

/// [fault]: fault injection for tests of the data service.
struct FaultSection {
  int worker = -1;             ///< worker index that misbehaves; -1 = none
  std::string mode = "delay";  ///< "delay", "stop" or "slow"
  double delay_s = 1;
  double factor = 2;       ///< mode "slow": builds take this many times longer
  std::int64_t after = 0;  ///< answers given normally before the fault starts
};

/// [comm]: gradient synchronisation among trainers.
struct CommSection {
  std::string strategy = "allreduce";  ///< "allreduce" or "kreduce"
  int aggregators = 0;                 ///< K-Reduce aggregators; 0 = every trainer
  int nonaggregator_batch_size = 0;    ///< per-step batch of a non-aggregator; 0 = equal
  bool stale_nonaggregators = false;   ///< non-aggregators apply merged gradients one step late
};

/// [limits]: Lambda-like resource limits per rank.
struct LimitsSection {
  int memory_mb = 0;  ///< 0: no limit
  double mb_per_vcpu = 1769;
  double cpu_period_ms = 20;
  std::string ranks = "all";  ///< "all", "trainers" or "workers"
  /// CPU share (vCPUs) the memory size buys; 0 when unlimited.
  double cpu_share() const { return memory_mb == 0 ? 0.0 : memory_mb / mb_per_vcpu; }
};

/// [prices]: price tables of the cost model (USD).
struct PricesSection {
  double lambda_x86_gb_s = 0.0000166667;
  double lambda_arm_gb_s = 0.0000133334;
  double lambda_request = 0.0000002;
  double lambda_max_seconds = 900;
  double object_put = 0.000005;
  double object_get = 0.0000004;
  double slurm_core_hour = 0.05;
  double slurm_gpu_hour = 2.0;
};

/// What the loader needs besides the file: values from outside the config, read once by
/// main() so that nothing below it reads the environment.
struct ConfigSources {
  std::vector<std::string> overrides;  ///< "key=value" from --set, applied in order
  std::string env_data_dir;            ///< $CONFLUX_DATA, or empty
  std::string launch_time;             ///< replaces {time} in run.dir, e.g. 20261121-141502
};

/// The validated configuration. Immutable: only the loader constructs it.
class Config {
 public:
  const RunSection& run() const noexcept { return run_; }
  const ClusterSection& cluster() const noexcept { return cluster_; }
  const DataSection& data() const noexcept { return data_; }
  const TransformSection& transform() const noexcept { return transform_; }
  const std::vector<model::LayerSpec>& layers() const noexcept { return layers_; }
  const TrainSection& train() const noexcept { return train_; }
  const CheckpointSection& checkpoint() const noexcept { return checkpoint_; }
  const ProfileSection& profile() const noexcept { return profile_; }
  const FaultSection& fault() const noexcept { return fault_; }
  const CommSection& comm() const noexcept { return comm_; }
  const LimitsSection& limits() const noexcept { return limits_; }
  const PricesSection& prices() const noexcept { return prices_; }
  /// The fully resolved config as TOML (every key, defaults filled in).
  const std::string& resolved_toml() const noexcept { return resolved_toml_; }
  /// "file:line:column" where a key was set (or "default"), for errors found after loading.
  std::string where(const std::string& key_path) const;
  /// Number of worker ranks for a job of `world_size` ranks; InputError (on every rank) when
  /// the rank count does not fit the config.
  int workers_for(int world_size) const;

 private:
  friend class ConfigLoader;
  Config() = default;
  RunSection run_;
  ClusterSection cluster_;
  DataSection data_;
  TransformSection transform_;
  std::vector<model::LayerSpec> layers_;
  TrainSection train_;
  CheckpointSection checkpoint_;
  ProfileSection profile_;
  FaultSection fault_;
  CommSection comm_;
  LimitsSection limits_;
  PricesSection prices_;
  std::string resolved_toml_;
  std::map<std::string, std::string> locations_;
};

/// Parses and validates a config file. InputError with "file:line:column: key: problem" for
/// syntax errors, unknown keys (with a did-you-mean hint), wrong types, out-of-range values,
/// missing required keys and bad overrides.
Config load_config_file(const std::filesystem::path& path, const ConfigSources& sources);

/// As load_config_file, from TOML text; `source_name` is used in messages.
Config load_config_string(std::string_view toml_text, std::string_view source_name,
                          const ConfigSources& sources);

}  // namespace conflux
