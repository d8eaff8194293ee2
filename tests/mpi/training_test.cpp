#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../support/data_dir.hpp"
#include "../support/stop_and_capture.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"

namespace conflux::train {
namespace {

// A quick MNIST run: 2048 training samples (the last step is short), 1 epoch.
Config small_mnist_config(int trainers, std::vector<std::string> extra = {}) {
  std::vector<std::string> overrides = {fmt::format("cluster.trainers={}", trainers),
                                        "data.train_limit=2000", "data.test_limit=500"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return load_config_file("configs/mnist_mlp.toml",
                          ConfigSources{overrides, testing::data_dir().string(), "test"});
}

struct RunResult {
  std::string digest;
  std::vector<float> params;
  double accuracy = 0;
};

// Trains on world ranks [0, trainers); the others idle. Result valid on rank 0.
RunResult train_on(int trainers, std::vector<std::string> extra = {}) {
  const auto world = comm::Communicator::world();
  const Config config = small_mnist_config(trainers, std::move(extra));
  const comm::RoleSplit split = comm::split_roles(world, trainers, world.size() - trainers);
  RunResult result;
  if (split.layout.role == comm::Role::kTrainer) {
    const data::SourceSplits data = open_training_data(config);
    Trainer trainer(TrainerSetup{config, split.role_comm, data});
    const TrainSummary summary = trainer.run({});
    result.digest = summary.digest;
    result.accuracy = summary.final_test_accuracy;
    result.params.assign(trainer.model().params().begin(), trainer.model().params().end());
  }
  world.barrier();
  return result;
}

class Training : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::data_dir() / "mnist"))
      GTEST_SKIP() << "MNIST not found under " << testing::data_dir();
  }
};

TEST_F(Training, SameSeedSameRanksGivesBitIdenticalWeights) {
  const RunResult a = train_on(2), b = train_on(2);
  if (comm::Communicator::world().rank() == 0) {
    EXPECT_EQ(a.digest, b.digest);
    EXPECT_GT(a.accuracy, 0.80);  // 1 epoch on 2000 samples already learns
  }
  const RunResult other_seed = train_on(2, {"run.seed=43"});
  if (comm::Communicator::world().rank() == 0) {
    EXPECT_NE(a.digest, other_seed.digest);
  }
}

TEST_F(Training, OneTrainerBatch128MatchesTwoTrainersBatch64) {
  const RunResult one = train_on(1), two = train_on(2);
  if (comm::Communicator::world().rank() != 0) return;
  ASSERT_EQ(one.params.size(), two.params.size());
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < one.params.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(one.params[i] - two.params[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(one.params[i])));
  }
  // Only the order of float additions differs (per-trainer sums, then the allreduce).
  EXPECT_LT(max_diff, 1e-4 * max_abs) << "max |diff| " << max_diff << ", max |w| " << max_abs;
  EXPECT_NEAR(one.accuracy, two.accuracy, 0.01);
}

TEST_F(Training, AllRanksTrainingGivesTheSameModelAsTwo) {
  const int world = comm::Communicator::world().size();
  if (world <= 2) GTEST_SKIP() << "needs more than 2 ranks";
  // With 4 ranks and batch 128: 4 trainers x 32; compare with 2 x 64 within float tolerance.
  const RunResult two = train_on(2), all = train_on(world);
  if (comm::Communicator::world().rank() != 0) return;
  double max_diff = 0;
  for (std::size_t i = 0; i < two.params.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(two.params[i] - all.params[i])));
  EXPECT_LT(max_diff, 1e-4);
}

using testing::StopAndCapture;

// Stops 2 trainers after `stop_at` steps, then continues from the captured state on
// `resume_trainers` trainers; returns the final digest (rank 0) and the audit outcome.
std::string stop_and_resume(std::size_t stop_at, int resume_trainers) {
  const auto world = comm::Communicator::world();
  const std::vector<std::string> extra = {"train.epochs=2", "data.audit=true",
                                          "run.dir=\"build/test-runs/resume\""};
  std::filesystem::create_directories("build/test-runs/resume");
  ckpt::TrainingState state;
  {
    const Config config = small_mnist_config(2, extra);
    const comm::RoleSplit split = comm::split_roles(world, 2, world.size() - 2);
    if (split.layout.role == comm::Role::kTrainer) {
      const data::SourceSplits data = open_training_data(config);
      Trainer trainer(TrainerSetup{config, split.role_comm, data});
      StopAndCapture stop(stop_at);
      TrainingCallback* callbacks[] = {&stop};
      const TrainSummary summary = trainer.run(callbacks);
      EXPECT_TRUE(summary.stopped);
      EXPECT_EQ(summary.global_step, stop_at);
      state = std::move(stop.state);
    }
  }
  // Trainer 0 holds the model copy: through a checkpoint file, as a real resume does.
  const auto file = std::filesystem::path("build/test-runs/resume") / "state.h5";
  if (world.rank() == 0) ckpt::write_checkpoint(file, state);
  world.barrier();
  std::string digest;
  const Config config = small_mnist_config(resume_trainers, extra);
  const comm::RoleSplit split =
      comm::split_roles(world, resume_trainers, world.size() - resume_trainers);
  if (split.layout.role == comm::Role::kTrainer) {
    const data::SourceSplits data = open_training_data(config);
    Trainer trainer(TrainerSetup{config, split.role_comm, data});
    const ckpt::TrainingState mine = ckpt::read_checkpoint(file);
    trainer.restore(mine, file.string());
    const TrainSummary summary = trainer.run({});  // the audit throws if a sample is missed
    EXPECT_FALSE(summary.stopped);
    digest = summary.digest;
  }
  world.barrier();
  return digest;
}

TEST_F(Training, CaptureAndRestoreMidEpochGivesBitIdenticalWeights) {
  const std::string whole = train_on(2, {"train.epochs=2"}).digest;
  // 2000 samples at batch 128: 16 steps per epoch; stop mid-epoch 1 and at its last step.
  for (std::size_t stop_at : {5u, 16u, 21u}) {
    const std::string resumed = stop_and_resume(stop_at, 2);
    if (comm::Communicator::world().rank() == 0) {
      EXPECT_EQ(resumed, whole) << "stopped after " << stop_at << " steps";
    }
  }
}

TEST_F(Training, RestoreOnMoreTrainersUsesEveryRemainingSampleOnce) {
  if (comm::Communicator::world().size() < 3) GTEST_SKIP() << "needs 3 ranks";
  const std::string resumed = stop_and_resume(21, 3);  // audited: throws on a missed sample
  if (comm::Communicator::world().rank() == 0) {
    EXPECT_FALSE(resumed.empty());
  }
}

}  // namespace
}  // namespace conflux::train
