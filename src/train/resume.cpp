#include "conflux/train/resume.hpp"

#include <toml++/toml.h>

#include <sstream>

namespace conflux::train {

namespace {

// The keys whose values shape the trained model; a checkpoint must agree on all of them.
const char* const kSameKeys[] = {"run.seed",           "data.dataset",   "data.train_limit",
                                 "train.batch_size",   "train.lr",       "train.lr_schedule",
                                 "train.warmup_steps", "train.momentum", "train.weight_decay",
                                 "train.epochs"};

std::string value_text(const toml::table& root, std::string_view path) {
  const toml::node_view<const toml::node> node = root.at_path(path);
  if (!node) return "(unset)";
  std::ostringstream out;
  if (const auto* table = node.as_table()) {
    out << *table;
  } else if (const auto* array = node.as_array()) {
    out << *array;
  } else {
    node.visit([&](const auto& v) {
      if constexpr (toml::is_value<decltype(v)>) out << v;
    });
  }
  return out.str();
}

toml::table parse_resolved(const std::string& text, const std::string& source) {
  try {
    return toml::parse(text);
  } catch (const toml::parse_error& e) {
    throw ckpt::CorruptCheckpoint(
        fmt::format("checkpoint {}: its stored config is not valid TOML: {}", source,
                    e.description()),
        __FILE__, __LINE__);
  }
}

}  // namespace

std::optional<ckpt::FoundCheckpoint> find_resume_checkpoint(const Config& config,
                                                            const Logger& log) {
  const auto& c = config.checkpoint();
  if (c.resume == "none" || c.resume.empty()) return std::nullopt;
  if (c.resume != "auto") {
    return ckpt::FoundCheckpoint{c.resume, ckpt::read_checkpoint(c.resume)};
  }
  const ckpt::CheckpointStore store(c.dir, c.keep);
  auto found = store.newest_valid([&](const std::filesystem::path& path, const std::string& why) {
    log.warn("skipping checkpoint {}: {}", path.string(), why);
  });
  if (!found) log.info("no checkpoint in {}: starting from scratch", c.dir.string());
  return found;
}

void check_resume_compatible(const Config& config, const ckpt::TrainingState& state,
                             const std::string& source) {
  const toml::table saved = parse_resolved(state.config_toml, source);
  const toml::table current = toml::parse(config.resolved_toml());
  std::vector<std::string> keys(std::begin(kSameKeys), std::end(kSameKeys));
  for (const auto& [key, node] : *current["transform"].as_table()) {
    if (key.str() != "plugin") keys.push_back("transform." + std::string(key.str()));
  }
  keys.push_back("model.layers");
  const bool constant_lr = config.train().lr_schedule == "constant";
  for (const std::string& key : keys) {
    const std::string was = value_text(saved, key), now = value_text(current, key);
    if (was == now) continue;
    if (key == "train.epochs" && constant_lr &&
        config.train().epochs * state.steps_per_epoch >= state.global_step) {
      continue;  // training longer under a constant rate changes nothing already done
    }
    if (key == "model.layers") {
      CONFLUX_INPUT_ERROR(
          "checkpoint {} was made with other model.layers than this run's ({}); resume with "
          "the same layers or start a new run",
          source, config.where(key));
    }
    CONFLUX_INPUT_ERROR(
        "checkpoint {} was made with {} = {}, but this run has {} = {} ({}); resume with the "
        "same value or start a new run",
        source, key, was, key, now, config.where(key));
  }
}

}  // namespace conflux::train
