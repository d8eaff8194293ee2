// check_resume_compatible: the checkpoint's stored config against this run's, key by key
// through the schema.

#include "conflux/train/resume.hpp"

#include <gtest/gtest.h>

#include "../support/config_text.hpp"
#include "../support/temp_dir.hpp"

namespace conflux::train {
namespace {

using testing::expect_input_error;

const std::string kConfig = std::string(testing::kMinimalConfig) + R"(
[run]
name = "r"
[transform]
mean = [0.5]
[train]
lr = 0.05
epochs = 2
batch_size = 64
)";

Config load(std::vector<std::string> overrides = {}) {
  return load_config_string(kConfig, "run.toml",
                            ConfigSources{std::move(overrides), "", "20260101-000000"});
}

// A checkpoint of `config` after `global_step` steps of 100 per epoch.
ckpt::TrainingState state_of(const Config& config, std::uint64_t global_step = 150) {
  ckpt::TrainingState state;
  state.config_toml = config.resolved_toml();
  state.steps_per_epoch = 100;
  state.global_step = global_step;
  return state;
}

TEST(Resume, SameTrainingProblemIsCompatible) {
  const Config config = load();
  EXPECT_NO_THROW(check_resume_compatible(config, state_of(config), "c.h5"));
  // Ranks, paths and run bookkeeping may differ.
  EXPECT_NO_THROW(check_resume_compatible(
      load({"cluster.workers=3", "run.name=\"other\"", "train.log_every=1", "data.offload_ratio=1",
            "train.lr=5e-2", "transform.mean=[0.50]"}),
      state_of(config), "c.h5"));
}

TEST(Resume, AKeyThatShapesTheModelMustAgree) {
  const Config saved = load();
  expect_input_error(
      [&] { check_resume_compatible(load({"train.batch_size=128"}), state_of(saved), "c.h5"); },
      {"checkpoint c.h5 was made with train.batch_size = 64, but this run has "
       "train.batch_size = 128 (--set train.batch_size=128)"});
  expect_input_error(
      [&] { check_resume_compatible(load({"transform.mean=[0.25]"}), state_of(saved), "c.h5"); },
      {"was made with transform.mean = [ 0.5 ], but this run has transform.mean = [ 0.25 ]"});
  expect_input_error(
      [&] { check_resume_compatible(load({"run.seed=1"}), state_of(saved), "c.h5"); },
      {"run.seed = 42", "run.seed = 1"});
}

TEST(Resume, LayersMustAgree) {
  const Config saved = load();
  std::string wider = kConfig;
  wider.replace(wider.find("out = 10"), 8, "out = 12");
  const Config config = load_config_string(wider, "run.toml", saved.sources());
  expect_input_error([&] { check_resume_compatible(config, state_of(saved), "c.h5"); },
                     {"checkpoint c.h5 was made with other model.layers than this run's "
                      "(run.toml:"});
}

TEST(Resume, EpochsMayGrowUnderAConstantRate) {
  const Config saved = load();
  EXPECT_NO_THROW(check_resume_compatible(load({"train.epochs=5"}), state_of(saved), "c.h5"));
  // Not below the steps already done, and not under a schedule that depends on the length.
  expect_input_error(
      [&] { check_resume_compatible(load({"train.epochs=1"}), state_of(saved), "c.h5"); },
      {"train.epochs = 2", "train.epochs = 1"});
  const Config cosine = load({"train.lr_schedule=cosine"});
  expect_input_error(
      [&] {
        check_resume_compatible(load({"train.lr_schedule=cosine", "train.epochs=5"}),
                                state_of(cosine), "c.h5");
      },
      {"train.epochs = 2"});
}

TEST(Resume, EpochsMayGrowUnderStepSchedules) {
  // A multi-step schedule does not depend on the run's length: more epochs change nothing done.
  const std::vector<std::string> multistep = {"train.lr_schedule=multistep",
                                              "train.lr_milestones=[5]"};
  std::vector<std::string> longer = multistep;
  longer.push_back("train.epochs=5");
  EXPECT_NO_THROW(check_resume_compatible(load(longer), state_of(load(multistep)), "c.h5"));
}

TEST(Resume, OptimiserKeysMustAgree) {
  const Config saved = load({"train.optimizer=adamw", "train.label_smoothing=0.1"});
  for (const std::vector<std::string>& other :
       {std::vector<std::string>{"train.optimizer=adam", "train.label_smoothing=0.1"},
        {"train.optimizer=adamw", "train.label_smoothing=0.1", "train.adam_beta2=0.98"},
        {"train.optimizer=adamw", "train.label_smoothing=0.1", "train.clip_grad_norm=1"},
        {"train.optimizer=adamw"}}) {
    expect_input_error([&] { check_resume_compatible(load(other), state_of(saved), "c.h5"); },
                       {"checkpoint c.h5 was made with train."});
  }
  EXPECT_NO_THROW(check_resume_compatible(
      load({"train.optimizer=adamw", "train.label_smoothing=0.1"}), state_of(saved), "c.h5"));
}

TEST(Resume, AStoredConfigThatIsNotOneIsACorruptCheckpoint) {
  const Config config = load();
  ckpt::TrainingState state = state_of(config);
  state.config_toml = "[train\n";
  EXPECT_THROW(check_resume_compatible(config, state, "c.h5"), ckpt::CorruptCheckpoint);
}

}  // namespace
}  // namespace conflux::train
