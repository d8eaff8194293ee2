#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../support/data_dir.hpp"
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
    const data::DatasetSplits data = load_training_data(config);
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

}  // namespace
}  // namespace conflux::train
