// Steps to a target from a reference run: S(B) = S_min (1 + B_noise / B), the run files it
// reads, and the errors of a reference that cannot give it.

#include "conflux/plan/steps_to_target.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/plan/cost_model.hpp"

namespace conflux::plan {
namespace {

using testing::TempDir;

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A 2-epoch run at global batch 128 (100 steps per epoch): the loss falls through 0.2 at step
// 150 (epoch 2), the test accuracy reaches 0.97 at the end of epoch 2; B_noise 400 then.
void write_run(const std::filesystem::path& dir, bool noise = true) {
  write(dir / "config.toml", "[run]\nname = \"x\"\n[train]\nbatch_size = 128\nlr = 0.05\n");
  write(dir / "steps.jsonl",
        "{\"step\": 50, \"epoch\": 1, \"loss\": 0.9}\n"
        "{\"step\": 100, \"epoch\": 1, \"loss\": 0.4}\n"
        "{\"step\": 150, \"epoch\": 2, \"loss\": 0.19}\n"
        "{\"step\": 200, \"epoch\": 2, \"loss\": 0.15}\n");
  const std::string n1 = noise ? ", \"noise_steps\": 100, \"noise_scale\": 200" : "";
  const std::string n2 = noise ? ", \"noise_steps\": 100, \"noise_scale\": 400" : "";
  write(dir / "metrics.jsonl", "{\"epoch\": 1, \"test_accuracy\": 0.95" + n1 +
                                   "}\n{\"epoch\": 2, \"test_accuracy\": 0.97" + n2 + "}\n");
}

std::string error_of(const std::filesystem::path& dir, TrainingTarget t) {
  try {
    steps_to_target_from_run(dir, t);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// steps_to_target_from_run on the run of write_run().
StepsToTarget from_reference(const TrainingTarget& t) {
  TempDir tmp;
  write_run(tmp.path());
  return steps_to_target_from_run(tmp.path(), t);
}

TEST(StepsToTarget, TrainingLossTargetFromTheFirstReportAtOrBelowIt) {
  const StepsToTarget s =
      from_reference({.kind = TrainingTarget::Kind::kTrainingLoss, .value = 0.2});
  EXPECT_EQ(s.reference_steps, 150);
  EXPECT_EQ(s.reference_batch, 128);
  EXPECT_EQ(s.b_noise, 400);  // epoch 2's
  EXPECT_DOUBLE_EQ(s.s_min, 150 / (1 + 400.0 / 128));
  EXPECT_EQ(s.steps(128), 150u);
  // Four times the batch: fewer steps, but more than a quarter (more samples).
  EXPECT_LT(s.steps(512), 150u);
  EXPECT_GT(s.steps(512) * 512, 150u * 128);
  EXPECT_EQ(s.steps(512), static_cast<std::uint64_t>(std::ceil(s.s_min * (1 + 400.0 / 512))));
}

TEST(StepsToTarget, AccuracyTargetFromTheEndOfTheFirstEpochThatReachesIt) {
  const StepsToTarget s =
      from_reference({.kind = TrainingTarget::Kind::kTestAccuracy, .value = 0.96});
  EXPECT_EQ(s.reference_steps, 200);
  EXPECT_EQ(s.b_noise, 400);
  EXPECT_EQ(s.target.describe(), "test accuracy >= 0.96");
}

TEST(StepsToTarget, EpochsCoveringCountStepsPerEpochWithAPartialLastBatch) {
  EXPECT_EQ(epochs_covering(1407, 60000, 128), 3);  // 469 steps per epoch, the last partial
  EXPECT_EQ(epochs_covering(1408, 60000, 128), 4);
  EXPECT_EQ(epochs_covering(0, 60000, 128), 1);
  EXPECT_EQ(epochs_covering(10, 100, 1000), 10);  // one (partial) step per epoch
}

TEST(StepsToTarget, CostModelTrainsEachCandidateForItsGlobalBatchsSteps) {
  PerformanceModel m;
  m.train = {.a = 1, .b = 0, .m = 0, .c = 0.01};
  m.epoch_samples = 60000;
  m.mb_per_vcpu = 1769;
  const StepsToTarget t{.s_min = 100, .b_noise = 1000};
  const CostModel cost(CostModelOptions{.model = &m, .target = Target::kSlurm, .to_target = &t});
  const Candidate c{.workers = 1,
                    .memory_mb = 1024,
                    .aggregators = 1,
                    .aggregator_batch = 250,
                    .nonaggregator_batch = 250};
  EXPECT_EQ(cost.iterations(c), 500u);  // 100 (1 + 1000 / 250)
}

TEST(StepsToTarget, ReferencesThatCannotGiveItAreClearErrors) {
  TempDir tmp;
  write_run(tmp.path());
  const std::string above = error_of(tmp.path(), {.value = 0.99});
  EXPECT_NE(above.find("never reached test accuracy >= 0.99 (best test accuracy 0.9700)"),
            std::string::npos)
      << above;
  const std::string loss =
      error_of(tmp.path(), {.kind = TrainingTarget::Kind::kTrainingLoss, .value = 0.01});
  EXPECT_NE(loss.find("lowest reported training loss 0.15"), std::string::npos) << loss;
  TempDir quiet;
  write_run(quiet.path(), false);
  const std::string noise = error_of(quiet.path(), {.value = 0.9});
  EXPECT_NE(noise.find("no gradient noise scale for epoch 1"), std::string::npos) << noise;
  EXPECT_NE(noise.find("train.noise_scale=true"), std::string::npos) << noise;
  TempDir noisy;
  write_run(noisy.path());
  write(noisy.path() / "metrics.jsonl",
        "{\"epoch\": 1, \"test_accuracy\": 0.95, \"noise_steps\": 3, \"noise_scale\": null}\n");
  const std::string told = error_of(noisy.path(), {.value = 0.9});
  EXPECT_NE(told.find("could not be told from its 3 steps"), std::string::npos) << told;
  TempDir empty;
  EXPECT_NE(error_of(empty.path(), {.value = 0.9}).find("config.toml"), std::string::npos);
  EXPECT_NE(error_of(tmp.path(), {.value = 1.5}).find("accuracy in (0, 1]"), std::string::npos);
}

}  // namespace
}  // namespace conflux::plan
