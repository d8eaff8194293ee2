#include "conflux/train/resume.hpp"

#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/config/schema.hpp"

namespace conflux::train {

namespace {

// The keys whose values shape the trained model; a checkpoint must agree on all of them:
// these, every transform.* key but the plugin's path (alphabetically), then model.layers.
std::vector<std::string> same_keys() {
  std::vector<std::string> keys = {"run.seed",
                                   "data.dataset",
                                   "data.train_limit",
                                   "train.batch_size",
                                   "train.optimizer",
                                   "train.lr",
                                   "train.lr_schedule",
                                   "train.warmup_steps",
                                   "train.lr_step_size",
                                   "train.lr_milestones",
                                   "train.lr_gamma",
                                   "train.momentum",
                                   "train.nesterov",
                                   "train.weight_decay",
                                   "train.adam_beta1",
                                   "train.adam_beta2",
                                   "train.adam_eps",
                                   "train.label_smoothing",
                                   "train.clip_grad_norm",
                                   "train.epochs"};
  std::vector<std::string> transform;
  for (const KeySpec& spec : config_keys()) {
    if (section_of(spec.path) == "transform" && spec.path != "transform.plugin") {
      transform.push_back(spec.path);
    }
  }
  std::sort(transform.begin(), transform.end());
  keys.insert(keys.end(), transform.begin(), transform.end());
  return keys;
}

// The checkpoint's config, loaded the way this run's was (same environment, no overrides).
Config stored_config(const Config& config, const ckpt::TrainingState& state,
                     const std::string& source) {
  try {
    return load_config_string(state.config_toml, "checkpoint " + source, config.sources());
  } catch (const InputError& e) {
    throw ckpt::CorruptCheckpoint(
        fmt::format("checkpoint {}: its stored config is not valid: {}", source, e.what()),
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
  std::vector<std::pair<std::filesystem::path, std::string>> rejected;
  auto found = store.newest_valid([&](const std::filesystem::path& path, const std::string& why) {
    log.warn("skipping checkpoint {}: {}", path.string(), why);
    rejected.emplace_back(path, why);
  });
  if (rejected.empty()) {
    if (!found) log.info("no checkpoint in {}: starting from scratch", c.dir.string());
    return found;
  }
  if (!found && c.on_all_corrupt != "restart") {
    std::vector<std::string> reasons;
    for (const auto& [path, why] : rejected)
      reasons.push_back(path.filename().string() + ": " + why);
    CONFLUX_INPUT_ERROR(
        "{}: all {} checkpoint(s) in {} were rejected ({}); nothing was changed. To start over "
        "from scratch, set checkpoint.on_all_corrupt = \"restart\" (the rejected files are then "
        "renamed *.corrupt), or use --resume none",
        config.where("checkpoint.resume"), rejected.size(), c.dir.string(),
        fmt::join(reasons, "; "));
  }
  // Set aside, so that retention never counts them as kept.
  for (const auto& entry : rejected) store.set_aside(entry.first);
  log.warn("{} checkpoint(s) in {} rejected and renamed *.corrupt; {}", rejected.size(),
           c.dir.string(),
           found ? fmt::format("resuming from the newest valid one, {}", found->path.string())
                 : std::string("starting from scratch (checkpoint.on_all_corrupt = \"restart\")"));
  return found;
}

void check_resume_compatible(const Config& config, const ckpt::TrainingState& state,
                             const std::string& source) {
  const Config saved = stored_config(config, state, source);
  // Only cosine annealing depends on the run's length.
  const bool length_free_lr = config.train().lr_schedule != "cosine";
  for (const std::string& key : same_keys()) {
    const KeySpec& spec = *find_key(key);
    if (spec.binding.get(saved) == spec.binding.get(config)) continue;
    if (key == "train.epochs" && length_free_lr &&
        config.train().epochs * state.steps_per_epoch >= state.global_step) {
      continue;  // training longer under such a schedule changes nothing already done
    }
    CONFLUX_INPUT_ERROR(
        "checkpoint {} was made with {} = {}, but this run has {} = {} ({}); resume with the "
        "same value or start a new run",
        source, key, saved.value_text(key), key, config.value_text(key), config.where(key));
  }
  CONFLUX_REQUIRE(saved.layers() == config.layers(),
                  "checkpoint {} was made with other model.layers than this run's ({}); resume "
                  "with the same layers or start a new run",
                  source, config.where("model.layers"));
}

}  // namespace conflux::train
