#pragma once
/// @file config.hpp
/// The validated, immutable experiment configuration: parsed once from TOML (toml++), with
/// `--set key=value` overrides applied, checked against the schema, then passed down as
/// `const Config&`. Configs derived in code (Config::with) go through the same checks.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "conflux/config/layer_spec.hpp"
#include "conflux/config/sections.hpp"

namespace conflux {

/// A key's value as code gives it and reads it: what TOML can hold for the key types (an
/// integer given to a number key is spelled as an integer in the resolved config).
using KeyValue = std::variant<bool, std::int64_t, double, std::string, std::vector<double>>;

/// One key set by code (Config::with): its dotted path and a typed value.
struct Setting {
  std::string key;  ///< e.g. "train.batch_size"
  KeyValue value;   ///< e.g. 256, 0.1, true, "kreduce", std::vector<double>{0.5, 0.5}
};

/// What the loader needs besides the file: values from outside the config, read once by
/// main() (through config/environment.hpp) so that nothing below it reads the environment.
struct ConfigSources {
  std::vector<std::string> overrides;  ///< "key=value" from --set, applied in order
  /// The data directory when data.dir is empty: $CONFLUX_DATA, else the per-user default
  /// (environment_data_dir()); empty when neither can be formed.
  std::string env_data_dir;
  std::string launch_time;  ///< replaces {time} in run.dir, e.g. 20261121-141502
  /// Results must be portable across CPU models ($CONFLUX_BLAS_PIN=portable pinned the BLAS
  /// kernels): train.conv_kernels = auto then means im2col, and onednn is refused.
  bool portable_results = false;
};

/// The validated configuration. Immutable: only the loader and with() make one.
class Config {
 public:
  const RunSection& run() const noexcept { return std::get<RunSection>(sections_); }
  const ClusterSection& cluster() const noexcept { return std::get<ClusterSection>(sections_); }
  const DataSection& data() const noexcept { return std::get<DataSection>(sections_); }
  const TransformSection& transform() const noexcept {
    return std::get<TransformSection>(sections_);
  }
  const std::vector<LayerSpec>& layers() const noexcept { return layers_; }
  const TrainSection& train() const noexcept { return std::get<TrainSection>(sections_); }
  const CheckpointSection& checkpoint() const noexcept {
    return std::get<CheckpointSection>(sections_);
  }
  const ProfileSection& profile() const noexcept { return std::get<ProfileSection>(sections_); }
  const FaultSection& fault() const noexcept { return std::get<FaultSection>(sections_); }
  const CommSection& comm() const noexcept { return std::get<CommSection>(sections_); }
  const LimitsSection& limits() const noexcept { return std::get<LimitsSection>(sections_); }
  const PricesSection& prices() const noexcept { return std::get<PricesSection>(sections_); }
  /// The fully resolved config as TOML (every key, defaults filled in), written from the
  /// typed sections through the schema.
  const std::string& resolved_toml() const noexcept { return resolved_toml_; }
  /// As resolved_toml(), but run.dir as written (with its {time} and {name}), so that every
  /// launch of the written file gets a directory of its own (what `conflux plan` emits).
  std::string launchable_toml() const;
  /// One key's value as TOML text, the way resolved_toml() spells it (e.g. `[ 0.5 ]`).
  std::string value_text(std::string_view key_path) const;
  /// "file:line:column" where a key was set (or "default"), for errors found after loading.
  std::string where(const std::string& key_path) const;
  /// Number of worker ranks for a job of `world_size` ranks; InputError (on every rank) when
  /// the rank count does not fit the config.
  int workers_for(int world_size) const;
  /// The environment this config was loaded with ($CONFLUX_DATA, launch time; no overrides),
  /// for loading another config text the same way.
  const ConfigSources& sources() const noexcept { return sources_; }
  /// This config with `settings` applied in order, checked like a loaded one (types, ranges,
  /// choices, cross-key rules; InputError naming `origin` otherwise), with paths resolved
  /// again and a new resolved_toml().
  Config with(const std::vector<Setting>& settings,
              std::string_view origin = "derived config") const;

 private:
  friend class ConfigBuilder;  // the one place that fills a Config (src/config)
  Config() = default;
  std::tuple<RunSection, ClusterSection, DataSection, TransformSection, TrainSection,
             CheckpointSection, ProfileSection, FaultSection, CommSection, LimitsSection,
             PricesSection>
      sections_;
  std::vector<LayerSpec> layers_;
  std::string resolved_toml_;
  ConfigSources sources_;
  std::map<std::string, std::string> locations_;
  // Hooked keys as written (e.g. run.dir with {time}): what their hooks resolve from.
  std::map<std::string, std::string> written_;
  // Number keys, and "key[i]" list entries, written as integers: TOML tells 600 from 600.0,
  // and the resolved config keeps the spelling it was given.
  std::set<std::string> integer_spelled_;
};

/// Parses and validates a config file. InputError with "file:line:column: key: problem" for
/// syntax errors, unknown keys (with a did-you-mean hint), wrong types, out-of-range values,
/// missing required keys and bad overrides.
Config load_config_file(const std::filesystem::path& path, const ConfigSources& sources);

/// As load_config_file, from TOML text; `source_name` is used in messages.
Config load_config_string(std::string_view toml_text, std::string_view source_name,
                          const ConfigSources& sources);

}  // namespace conflux
