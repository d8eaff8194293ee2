// Training with comm.strategy = "kreduce" on 2 trainers (further ranks idle): the same weights
// as MPI allreduce with equal batches, and with stale non-aggregators a checkpoint is a sync
// point, so stopping there and resuming gives the weights of the uninterrupted run.

#include <gtest/gtest.h>

#include <filesystem>

#include "../support/data_dir.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"

namespace conflux::train {
namespace {

constexpr int kTrainers = 2;
// K = 1 of 2: the aggregator takes 48 samples per step, the non-aggregator 80, a step late.
const std::vector<std::string> kStale = {
    "comm.strategy=\"kreduce\"",          "comm.aggregators=1", "comm.nonaggregator_batch_size=80",
    "comm.stale_nonaggregators=true",     "train.epochs=2",     "data.audit=true",
    "run.dir=\"build/test-runs/kreduce\""};

Config mnist_config(std::vector<std::string> extra) {
  std::vector<std::string> overrides = {fmt::format("cluster.trainers={}", kTrainers),
                                        "data.train_limit=2000", "data.test_limit=500"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return load_config_file("configs/mnist_mlp.toml",
                          ConfigSources{overrides, testing::data_dir().string(), "test"});
}

// Captures the training state after `at` steps; stops there when `stop`.
class CaptureAt final : public TrainingCallback {
 public:
  CaptureAt(std::size_t at, bool stop) : at_(at), stop_(stop) {}
  void on_step_end(StepContext& context) override {
    if (context.global_step() != at_) return;
    context.capture(state);
    if (stop_) context.request_stop();
  }
  ckpt::TrainingState state;

 private:
  std::size_t at_;
  bool stop_;
};

// Trains on the first 2 ranks; the digest on rank 0 (empty elsewhere). With `restore_from`,
// continues from that checkpoint file; with `callback`, calls it after every step.
std::string train(const std::vector<std::string>& extra, TrainingCallback* callback = nullptr,
                  const std::filesystem::path& restore_from = {}) {
  const auto world = comm::Communicator::world();
  const Config config = mnist_config(extra);
  const comm::RoleSplit split = comm::split_roles(world, kTrainers, world.size() - kTrainers);
  std::string digest;
  if (split.layout.role == comm::Role::kTrainer) {
    const data::SourceSplits data = open_training_data(config);
    Trainer trainer(TrainerSetup{config, split.role_comm, data});
    if (!restore_from.empty()) trainer.restore(ckpt::read_checkpoint(restore_from), "test");
    std::vector<TrainingCallback*> callbacks;
    if (callback != nullptr) callbacks.push_back(callback);
    const TrainSummary summary = trainer.run(callbacks);  // throws if the replicas differ
    if (world.rank() == 0) digest = summary.digest;
  }
  world.barrier();
  return digest;
}

class KReduceTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::data_dir() / "mnist"))
      GTEST_SKIP() << "MNIST not found under " << testing::data_dir();
    std::filesystem::create_directories("build/test-runs/kreduce");
  }
};

TEST_F(KReduceTraining, EqualBatchesGiveTheWeightsOfAllreduce) {
  // A sum of two gradients is the same bits in either order, so every K matches allreduce.
  const std::string allreduce = train({});
  const std::string all = train({"comm.strategy=\"kreduce\""});
  const std::string one = train({"comm.strategy=\"kreduce\"", "comm.aggregators=1"});
  if (comm::Communicator::world().rank() != 0) return;
  EXPECT_FALSE(allreduce.empty());
  EXPECT_EQ(all, allreduce);
  EXPECT_EQ(one, allreduce);
}

TEST_F(KReduceTraining, StaleRunStoppedAtACheckpointResumesBitIdentically) {
  const auto world = comm::Communicator::world();
  // 2000 samples at 128: 16 steps per epoch; capture mid-epoch 0 (a sync point in both runs).
  constexpr std::size_t kAt = 7;
  CaptureAt keep_going(kAt, false);
  const std::string whole = train(kStale, &keep_going);
  const std::string plain = train(kStale);
  CaptureAt stop(kAt, true);
  const std::string stopped = train(kStale, &stop);
  const auto file = std::filesystem::path("build/test-runs/kreduce") / "state.h5";
  if (world.rank() == 0) ckpt::write_checkpoint(file, stop.state);
  world.barrier();
  const std::string resumed = train(kStale, nullptr, file);  // audited: every sample once
  if (world.rank() != 0) return;
  EXPECT_FALSE(whole.empty());
  EXPECT_EQ(resumed, whole);
  // Without the sync point the non-aggregator's gradients stay stale through step 7.
  EXPECT_NE(plain, whole);
}

}  // namespace
}  // namespace conflux::train
