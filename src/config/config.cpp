#include "conflux/config/config.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"

namespace conflux {

namespace {

const std::vector<std::string> kSections = {"run",   "cluster", "data",    "transform",
                                            "model", "train",   "profile", "checkpoint",
                                            "fault", "comm",    "limits",  "prices"};

std::vector<std::string> all_key_paths() {
  std::vector<std::string> paths;
  for (const auto& k : config_keys()) paths.push_back(k.path);
  paths.push_back("model.layers");
  return paths;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

}  // namespace

/// Turns TOML text plus overrides into a Config; one instance per load.
class ConfigLoader {
 public:
  ConfigLoader(std::string source_name, const ConfigSources& sources)
      : source_name_(std::move(source_name)), sources_(sources) {}

  Config load(std::string_view text) {
    parse(text);
    for (const auto& override_text : sources_.overrides) apply_override(override_text);
    check_unknown_keys();
    Config config;
    read_sections(config);
    read_layers(config);
    check_cross_key_rules(config);
    config.resolved_toml_ = resolved_toml(config);
    config.locations_ = std::move(locations_);
    return config;
  }

 private:
  [[noreturn]] void fail_at(const toml::source_region& where, const std::string& message) const {
    CONFLUX_INPUT_ERROR("{}: {}", location(where), message);
  }

  std::string location(const toml::source_region& where) const {
    const std::string path = where.path ? std::string(*where.path) : source_name_;
    if (path.rfind("--set", 0) == 0) return path;  // an override: its text is the best locator
    if (where.begin.line == 0) return path;
    return fmt::format("{}:{}:{}", path, where.begin.line, where.begin.column);
  }

  void parse(std::string_view text) {
    try {
      root_ = toml::parse(text, source_name_);
    } catch (const toml::parse_error& e) {
      fail_at(e.source(), fmt::format("TOML syntax error: {}", e.description()));
    }
  }

  void apply_override(const std::string& text) {
    const auto eq = text.find('=');
    CONFLUX_REQUIRE(eq != std::string::npos && eq > 0,
                    "--set '{}': expected key=value, e.g. --set train.lr=0.1", text);
    std::string path = text.substr(0, eq);
    path.erase(path.find_last_not_of(" \t") + 1);
    const std::string value_text = text.substr(eq + 1);
    const std::string origin = fmt::format("--set {}", text);
    CONFLUX_REQUIRE(find_key(path) != nullptr, "{}: unknown key '{}'{}", origin, path,
                    did_you_mean(path, all_key_paths()));
    toml::table snippet;
    try {
      snippet = toml::parse(std::string_view("v = " + value_text), std::string_view(origin));
    } catch (const toml::parse_error&) {
      // Not a TOML value: take the text as a bare string (e.g. --set data.dataset=mnist).
      snippet = toml::table{};
      snippet.insert_or_assign("v", value_text);
    }
    const auto dot = path.find('.');
    const std::string section = path.substr(0, dot);
    if (!root_.contains(section)) root_.insert(section, toml::table{});
    toml::table* table = root_[section].as_table();
    CONFLUX_REQUIRE(table != nullptr, "{}: '{}' is not a table in {}", origin, section,
                    source_name_);
    table->insert_or_assign(path.substr(dot + 1), *snippet.get("v"));
    override_origin_[path] = origin;
  }

  void check_unknown_keys() const {
    for (const auto& [section_key, section_node] : root_) {
      const std::string section(section_key.str());
      if (std::find(kSections.begin(), kSections.end(), section) == kSections.end()) {
        fail_at(section_key.source(),
                fmt::format("unknown section '{}'{}", section, did_you_mean(section, kSections)));
      }
      const toml::table* table = section_node.as_table();
      if (table == nullptr) {
        fail_at(section_node.source(),
                fmt::format("'{}' must be a table ([{}]), not a value", section, section));
      }
      for (const auto& [key, node] : *table) {
        const std::string path = section + "." + std::string(key.str());
        if (path == "model.layers" || find_key(path) != nullptr) continue;
        fail_at(key.source(),
                fmt::format("unknown key '{}'{}", path, did_you_mean(path, all_key_paths())));
      }
    }
  }

  // Returns the node for a key (nullptr when absent) and records where it came from.
  const toml::node* lookup(const std::string& path) {
    const toml::node* node = root_.at_path(path).node();
    if (node == nullptr) {
      locations_[path] = "default";
    } else if (auto it = override_origin_.find(path); it != override_origin_.end()) {
      locations_[path] = it->second;
    } else {
      locations_[path] = location(node->source());
    }
    return node;
  }

  // Validates one value against its spec; `label` names it in messages.
  const toml::node& checked(const toml::node& node, const KeySpec& spec,
                            const std::string& label) const {
    const auto wrong = [&](const std::string& got) {
      // Overridden values are copies that lose their source region: name the --set instead.
      const auto origin = override_origin_.find(label);
      CONFLUX_INPUT_ERROR(
          "{}: {}: expected {}, got {}",
          origin != override_origin_.end() ? origin->second : location(node.source()), label,
          describe_expected(spec), got);
    };
    const auto check_range = [&](double v, const std::string& shown) {
      if (!std::isfinite(v)) wrong(shown);
      if (spec.min && (v < *spec.min || (spec.min_exclusive && v == *spec.min))) wrong(shown);
      if (spec.max && v > *spec.max) wrong(shown);
    };
    switch (spec.type) {
      case ValueType::kInt:
        if (!node.is_integer()) wrong(describe_node(node));
        check_range(static_cast<double>(*node.value<std::int64_t>()), describe_node(node));
        break;
      case ValueType::kFloat:
        if (!node.is_number()) wrong(describe_node(node));
        check_range(*node.value<double>(), describe_node(node));
        break;
      case ValueType::kFloatOrAuto:
        if (node.is_string() && *node.value<std::string>() == "auto") break;
        if (!node.is_number()) wrong(describe_node(node));
        check_range(*node.value<double>(), describe_node(node));
        break;
      case ValueType::kBool:
        if (!node.is_boolean()) wrong(describe_node(node));
        break;
      case ValueType::kString: {
        if (!node.is_string()) wrong(describe_node(node));
        const std::string value = *node.value<std::string>();
        if (!spec.choices.empty() &&
            std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
          wrong(fmt::format("\"{}\"{}", value, did_you_mean(value, spec.choices)));
        }
        break;
      }
      case ValueType::kFloatList: {
        const toml::array* array = node.as_array();
        // Only keys whose default is the empty list accept one (e.g. data.offload_ratios).
        if (array == nullptr || (array->empty() && spec.default_toml != "[]"))
          wrong(describe_node(node));
        for (const auto& element : *array) {
          if (!element.is_number()) wrong(fmt::format("an entry {}", describe_node(element)));
          check_range(*element.value<double>(), fmt::format("{}", *element.value<double>()));
        }
        break;
      }
    }
    return node;
  }

  static std::string describe_node(const toml::node& node) {
    std::ostringstream out;
    if (node.is_table()) return "a table";
    if (node.is_array()) out << "the list ";
    const char* kind = node.is_string()           ? "string "
                       : node.is_integer()        ? "integer "
                       : node.is_floating_point() ? "number "
                       : node.is_boolean()        ? "boolean "
                                                  : "";
    if (!node.is_array()) out << kind;
    node.visit([&](const auto& n) { out << n; });
    return out.str();
  }

  // The effective node of a scalar key: the config's, else the schema default.
  const toml::node& value_of(const std::string& path) {
    const KeySpec* spec = find_key(path);
    const toml::node* node = lookup(path);
    if (node == nullptr) {
      if (spec->default_toml.empty()) {
        CONFLUX_INPUT_ERROR("{}: missing required key '{}' ({})", source_name_, path, spec->doc);
      }
      defaults_.push_back(
          toml::parse(std::string_view("v = " + spec->default_toml), std::string_view("default")));
      node = defaults_.back().get("v");
    }
    const toml::node& value = checked(*node, *spec, path);
    record_effective(path, value);
    return value;
  }

  // Keeps the value a key took, for the resolved config.
  void record_effective(const std::string& path, const toml::node& value) {
    const auto dot = path.find('.');
    const std::string section = path.substr(0, dot);
    if (!effective_.contains(section)) effective_.insert(section, toml::table{});
    effective_[section].as_table()->insert_or_assign(path.substr(dot + 1), value);
  }

  std::int64_t get_int(const std::string& path) { return *value_of(path).value<std::int64_t>(); }
  double get_double(const std::string& path) { return *value_of(path).value<double>(); }
  bool get_bool(const std::string& path) { return *value_of(path).value<bool>(); }
  std::string get_string(const std::string& path) { return *value_of(path).value<std::string>(); }
  float get_float(const std::string& path) { return static_cast<float>(get_double(path)); }
  std::vector<float> get_floats(const std::string& path) {
    std::vector<float> values;
    for (const auto& e : *value_of(path).as_array()) values.push_back(*e.value<double>());
    return values;
  }

  void read_sections(Config& c) {
    c.run_.name = get_string("run.name");
    c.run_.seed = static_cast<std::uint64_t>(get_int("run.seed"));
    const std::string dir = get_string("run.dir");
    CONFLUX_REQUIRE(!dir.empty(), "{}: run.dir must not be empty", locations_["run.dir"]);
    c.run_.dir =
        replace_all(replace_all(dir, "{time}", sources_.launch_time), "{name}", c.run_.name);

    c.cluster_.trainers = static_cast<int>(get_int("cluster.trainers"));
    c.cluster_.workers = static_cast<int>(get_int("cluster.workers"));
    c.cluster_.preprocess_threads = static_cast<int>(get_int("cluster.preprocess_threads"));
    c.cluster_.blas_threads = static_cast<int>(get_int("cluster.blas_threads"));
    c.cluster_.peer_timeout_s = get_double("cluster.peer_timeout_s");
    c.cluster_.worker_threads = static_cast<int>(get_int("cluster.worker_threads"));

    c.data_.dataset = get_string("data.dataset");
    std::string data_dir = get_string("data.dir");
    if (data_dir.empty()) data_dir = sources_.env_data_dir;
    if (data_dir.empty()) data_dir = "../shared/data";
    c.data_.dir = std::filesystem::absolute(data_dir).lexically_normal();
    const std::string hdf5_file = get_string("data.hdf5_file");
    if (!hdf5_file.empty()) c.data_.hdf5_file = std::filesystem::absolute(hdf5_file);
    c.data_.train_limit = get_int("data.train_limit");
    c.data_.test_limit = get_int("data.test_limit");
    if (const toml::node& ratio = value_of("data.offload_ratio"); ratio.is_string()) {
      c.data_.offload_auto = true;  // the controller starts every trainer at 0
    } else {
      c.data_.offload_ratio = *ratio.value<double>();
    }
    c.data_.offload_ratios = get_floats("data.offload_ratios");
    c.data_.prefetch_batches = static_cast<int>(get_int("data.prefetch_batches"));
    c.data_.worker_credits = static_cast<int>(get_int("data.worker_credits"));
    c.data_.worker_timeout_s = get_double("data.worker_timeout_s");
    c.data_.worker_backoff_s = get_double("data.worker_backoff_s");
    c.data_.worker_send_buffers = static_cast<int>(get_int("data.worker_send_buffers"));
    c.data_.audit = get_bool("data.audit");

    c.transform_.pad = static_cast<int>(get_int("transform.pad"));
    c.transform_.crop = static_cast<int>(get_int("transform.crop"));
    c.transform_.hflip = get_bool("transform.hflip");
    c.transform_.mean = get_floats("transform.mean");
    c.transform_.std = get_floats("transform.std");
    auto& t = c.transform_;
    t.resized_crop = static_cast<int>(get_int("transform.resized_crop"));
    t.resized_crop_scale_min = get_float("transform.resized_crop_scale_min");
    t.resized_crop_scale_max = get_float("transform.resized_crop_scale_max");
    t.resized_crop_ratio_min = get_float("transform.resized_crop_ratio_min");
    t.resized_crop_ratio_max = get_float("transform.resized_crop_ratio_max");
    t.rotation_degrees = get_float("transform.rotation_degrees");
    t.brightness = get_float("transform.brightness");
    t.contrast = get_float("transform.contrast");
    t.saturation = get_float("transform.saturation");
    t.blur_kernel = static_cast<int>(get_int("transform.blur_kernel"));
    t.blur_sigma_min = get_float("transform.blur_sigma_min");
    t.blur_sigma_max = get_float("transform.blur_sigma_max");
    t.blur_probability = get_float("transform.blur_probability");
    t.cutout_size = static_cast<int>(get_int("transform.cutout_size"));
    t.cutout_probability = get_float("transform.cutout_probability");
    const std::string plugin = get_string("transform.plugin");
    if (!plugin.empty()) t.plugin = std::filesystem::absolute(plugin).lexically_normal();
    t.plugin_args = get_string("transform.plugin_args");

    c.train_.epochs = static_cast<int>(get_int("train.epochs"));
    c.train_.batch_size = static_cast<int>(get_int("train.batch_size"));
    c.train_.lr = get_double("train.lr");
    c.train_.lr_schedule = get_string("train.lr_schedule");
    c.train_.warmup_steps = get_int("train.warmup_steps");
    c.train_.momentum = get_double("train.momentum");
    c.train_.weight_decay = get_double("train.weight_decay");
    c.train_.log_every = static_cast<int>(get_int("train.log_every"));
    c.train_.eval = get_bool("train.eval");

    auto& k = c.checkpoint_;
    k.every_steps = get_int("checkpoint.every_steps");
    k.every_seconds = get_double("checkpoint.every_seconds");
    k.keep = static_cast<int>(get_int("checkpoint.keep"));
    const std::string ckpt_dir = get_string("checkpoint.dir");
    k.dir = ckpt_dir.empty() ? c.run_.dir / "checkpoints" : std::filesystem::path(ckpt_dir);
    k.resume = get_string("checkpoint.resume");
    k.final = get_bool("checkpoint.final");

    c.fault_.worker = static_cast<int>(get_int("fault.worker"));
    c.fault_.mode = get_string("fault.mode");
    c.fault_.delay_s = get_double("fault.delay_s");
    c.fault_.after = get_int("fault.after");
    c.fault_.factor = get_double("fault.factor");

    c.train_.device = get_string("train.device");

    auto& comm = c.comm_;
    comm.strategy = get_string("comm.strategy");
    comm.aggregators = static_cast<int>(get_int("comm.aggregators"));
    comm.nonaggregator_batch_size = static_cast<int>(get_int("comm.nonaggregator_batch_size"));
    comm.stale_nonaggregators = get_bool("comm.stale_nonaggregators");

    auto& limits = c.limits_;
    limits.memory_mb = static_cast<int>(get_int("limits.memory_mb"));
    limits.mb_per_vcpu = get_double("limits.mb_per_vcpu");
    limits.cpu_period_ms = get_double("limits.cpu_period_ms");
    limits.ranks = get_string("limits.ranks");

    auto& prices = c.prices_;
    prices.lambda_x86_gb_s = get_double("prices.lambda_x86_gb_s");
    prices.lambda_arm_gb_s = get_double("prices.lambda_arm_gb_s");
    prices.lambda_request = get_double("prices.lambda_request");
    prices.lambda_max_seconds = get_double("prices.lambda_max_seconds");
    prices.object_put = get_double("prices.object_put");
    prices.object_get = get_double("prices.object_get");
    prices.slurm_core_hour = get_double("prices.slurm_core_hour");
    prices.slurm_gpu_hour = get_double("prices.slurm_gpu_hour");

    auto& p = c.profile_;
    p.enabled = get_bool("profile.enabled");
    p.initial_steps = get_int("profile.initial_steps");
    p.steps = get_int("profile.steps");
    p.bottleneck_threshold = get_double("profile.bottleneck_threshold");
    p.interval_s = get_double("profile.interval_s");
    p.hysteresis = get_double("profile.hysteresis");
    p.timeline = get_bool("profile.timeline");
    p.timeline_max_events = get_int("profile.timeline_max_events");
  }

  void read_layers(Config& c) {
    const toml::node* node = lookup("model.layers");
    if (node == nullptr) {
      CONFLUX_INPUT_ERROR(
          "{}: missing required key 'model.layers' (a list of [[model.layers]] tables, e.g. "
          "type = \"linear\", out = 10)",
          source_name_);
    }
    const toml::array* layers = node->as_array();
    if (layers == nullptr || !layers->is_array_of_tables() || layers->empty()) {
      fail_at(node->source(), "model.layers: expected a non-empty list of [[model.layers]] tables");
    }
    std::vector<std::string> types;
    for (const auto& l : layer_keys()) types.push_back(l.type);
    for (std::size_t i = 0; i < layers->size(); ++i) {
      const toml::table& table = *layers->at(i).as_table();
      const std::string label = fmt::format("model.layers[{}]", i);
      const toml::node* type_node = table.get("type");
      if (type_node == nullptr || !type_node->is_string()) {
        fail_at(table.source(),
                fmt::format("{}: missing 'type' (one of {})", label, fmt::join(types, ", ")));
      }
      const std::string type = *type_node->value<std::string>();
      const auto spec_it = std::find_if(layer_keys().begin(), layer_keys().end(),
                                        [&](const auto& l) { return l.type == type; });
      if (spec_it == layer_keys().end()) {
        fail_at(type_node->source(),
                fmt::format("{}.type: unknown layer type \"{}\"{} (known: {})", label, type,
                            did_you_mean(type, types), fmt::join(types, ", ")));
      }
      std::vector<std::string> allowed = {"type"};
      for (const auto& k : spec_it->keys) allowed.push_back(k.path);
      for (const auto& [key, value] : table) {
        const std::string name(key.str());
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
          fail_at(key.source(), fmt::format("{}: key '{}' is not valid for a {} layer{} "
                                            "(valid: {})",
                                            label, name, type, did_you_mean(name, allowed),
                                            fmt::join(allowed, ", ")));
        }
      }
      model::LayerSpec spec;
      spec.type = type;
      for (const auto& k : spec_it->keys) {
        const toml::node* value = table.get(k.path);
        if (value == nullptr) {
          if (k.default_toml.empty()) {
            fail_at(table.source(),
                    fmt::format("{}: a {} layer needs '{}' ({})", label, type, k.path, k.doc));
          }
          continue;  // LayerSpec defaults mirror the schema defaults
        }
        const int v = static_cast<int>(
            *checked(*value, k, fmt::format("{}.{}", label, k.path)).value<std::int64_t>());
        if (k.path == "out") spec.out = v;
        if (k.path == "kernel") spec.kernel = v;
        if (k.path == "stride") spec.stride = v;
        if (k.path == "padding") spec.padding = v;
      }
      if (type == "maxpool") {
        if (table.get("kernel") == nullptr) spec.kernel = 2;
        const toml::node* stride = table.get("stride");
        if (stride == nullptr || *stride->value<std::int64_t>() == 0) spec.stride = spec.kernel;
      }
      c.layers_.push_back(spec);
    }
  }

  void check_cross_key_rules(const Config& c) {
    const auto& t = c.transform_;
    CONFLUX_REQUIRE(t.mean.size() == t.std.size() || t.mean.size() == 1 || t.std.size() == 1,
                    "{}: transform.mean has {} values but transform.std has {}; give 1 or one "
                    "per channel for each",
                    locations_["transform.std"], t.mean.size(), t.std.size());
    CONFLUX_REQUIRE(c.train_.batch_size >= c.cluster_.trainers,
                    "{}: train.batch_size = {} is smaller than cluster.trainers = {}; every "
                    "trainer needs at least one sample per step",
                    locations_["train.batch_size"], c.train_.batch_size, c.cluster_.trainers);
    CONFLUX_REQUIRE(!c.data_.offload_auto || c.data_.offload_ratios.empty(),
                    "{}: data.offload_ratio = \"auto\" and data.offload_ratios both given; the "
                    "controller sets every trainer's ratio, so drop data.offload_ratios",
                    locations_["data.offload_ratios"]);
    CONFLUX_REQUIRE(!c.data_.offload_auto || c.profile_.enabled,
                    "{}: data.offload_ratio = \"auto\" needs the profiler (profile.enabled = "
                    "true)",
                    locations_["profile.enabled"]);
    CONFLUX_REQUIRE(
        c.data_.offload_ratios.empty() ||
            c.data_.offload_ratios.size() == static_cast<std::size_t>(c.cluster_.trainers),
        "{}: data.offload_ratios has {} values but cluster.trainers = {}; give one "
        "per trainer or none",
        locations_["data.offload_ratios"], c.data_.offload_ratios.size(), c.cluster_.trainers);
    CONFLUX_REQUIRE(c.limits_.memory_mb == 0 || c.limits_.memory_mb >= 128,
                    "{}: limits.memory_mb = {} is below Lambda's smallest size; give 0 (no "
                    "limit) or 128..10240",
                    locations_["limits.memory_mb"], c.limits_.memory_mb);
    CONFLUX_REQUIRE(c.comm_.aggregators <= c.cluster_.trainers,
                    "{}: comm.aggregators = {} exceeds cluster.trainers = {}",
                    locations_["comm.aggregators"], c.comm_.aggregators, c.cluster_.trainers);
    CONFLUX_REQUIRE(c.comm_.strategy == "kreduce" ||
                        (c.comm_.aggregators == 0 && c.comm_.nonaggregator_batch_size == 0 &&
                         !c.comm_.stale_nonaggregators),
                    "{}: comm.aggregators, comm.nonaggregator_batch_size and "
                    "comm.stale_nonaggregators need comm.strategy = \"kreduce\"",
                    locations_["comm.strategy"]);
    // K-Reduce's unequal batches: the step stays train.batch_size samples; the W-K
    // non-aggregators take Bn each and the K aggregators share the rest (data::BatchSplit).
    const std::int64_t w = c.cluster_.trainers;
    const std::int64_t k = c.comm_.aggregators == 0 ? w : c.comm_.aggregators;
    const std::int64_t bn = c.comm_.nonaggregator_batch_size;
    CONFLUX_REQUIRE(bn == 0 || k < w,
                    "{}: comm.nonaggregator_batch_size = {} but every trainer is an aggregator "
                    "(comm.aggregators = {}, cluster.trainers = {}); set comm.aggregators below "
                    "cluster.trainers or leave comm.nonaggregator_batch_size at 0",
                    locations_["comm.nonaggregator_batch_size"], bn, c.comm_.aggregators, w);
    CONFLUX_REQUIRE(bn == 0 || c.train_.batch_size - (w - k) * bn >= k,
                    "{}: comm.nonaggregator_batch_size = {} for {} non-aggregator(s) leaves {} of "
                    "train.batch_size = {} for comm.aggregators = {}; every aggregator needs at "
                    "least one sample per step: at most {} per non-aggregator",
                    locations_["comm.nonaggregator_batch_size"], bn, w - k,
                    c.train_.batch_size - (w - k) * bn, c.train_.batch_size, k,
                    (c.train_.batch_size - k) / std::max<std::int64_t>(1, w - k));
  }

  std::string resolved_toml(const Config& c) {
    // Every key as it was read, with paths resolved the way the run uses them.
    toml::table root = effective_;
    root["run"].as_table()->insert_or_assign("dir", c.run_.dir.string());
    root["data"].as_table()->insert_or_assign("dir", c.data_.dir.string());
    root["data"].as_table()->insert_or_assign("hdf5_file", c.data_.hdf5_file.string());
    root["transform"].as_table()->insert_or_assign("plugin", c.transform_.plugin.string());
    toml::array layers;
    for (const auto& l : c.layers_) {
      toml::table t{{"type", l.type}};
      if (l.type == "linear" || l.type == "conv2d") t.insert("out", l.out);
      if (l.type == "conv2d" || l.type == "maxpool") {
        t.insert("kernel", l.kernel);
        t.insert("stride", l.stride);
      }
      if (l.type == "conv2d") t.insert("padding", l.padding);
      layers.push_back(std::move(t));
    }
    root.insert("model", toml::table{{"layers", layers}});
    std::ostringstream out;
    out << "# Fully resolved conflux config (every key, defaults filled in).\n" << root << "\n";
    return out.str();
  }

  std::string source_name_;
  const ConfigSources& sources_;
  toml::table root_;
  toml::table effective_;              // every key's value as read, by section
  std::vector<toml::table> defaults_;  // parsed defaults that value_of() hands out
  std::map<std::string, std::string> override_origin_;
  std::map<std::string, std::string> locations_;
};

std::string Config::where(const std::string& key_path) const {
  auto it = locations_.find(key_path);
  return it == locations_.end() ? std::string("default") : it->second;
}

int Config::workers_for(int world_size) const {
  const int trainers = cluster_.trainers;
  CONFLUX_REQUIRE(world_size >= trainers,
                  "{}: cluster.trainers = {} needs at least {} ranks, but the job has {} "
                  "(mpirun -np / srun -n)",
                  where("cluster.trainers"), trainers, trainers, world_size);
  const int workers = world_size - trainers;
  CONFLUX_REQUIRE(cluster_.workers < 0 || cluster_.workers == workers,
                  "{}: cluster.trainers = {} and cluster.workers = {} need {} ranks, but the "
                  "job has {} (mpirun -np / srun -n)",
                  where("cluster.workers"), trainers, cluster_.workers, trainers + cluster_.workers,
                  world_size);
  return workers;
}

Config load_config_string(std::string_view toml_text, std::string_view source_name,
                          const ConfigSources& sources) {
  return ConfigLoader(std::string(source_name), sources).load(toml_text);
}

Config load_config_file(const std::filesystem::path& path, const ConfigSources& sources) {
  std::ifstream in(path, std::ios::binary);
  CONFLUX_REQUIRE(in.good(), "{}: cannot open config file ({})", path.string(),
                  std::filesystem::exists(path) ? "permission denied" : "no such file");
  std::ostringstream text;
  text << in.rdbuf();
  return load_config_string(text.str(), path.string(), sources);
}

}  // namespace conflux
