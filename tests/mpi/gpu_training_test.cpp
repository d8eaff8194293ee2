// GPU trainer ranks (train.device). Everywhere: the collective device choice agrees on every
// trainer ("auto" without a GPU is the CPU, "gpu" without one an InputError on every trainer,
// never a hang). With a GPU (skipped with "no GPU: <reason>" otherwise):
//  - one GPU trainer trains 10 MNIST steps to the CPU trainer's losses: every step's mean loss
//    within relative 1e-3, the final weights within 1e-3 of the largest weight, test accuracy
//    within 0.01 (cuBLAS and OpenBLAS differ only in summation order; the rest is bit-exact);
//  - a GPU run stopped mid-epoch and resumed from its checkpoint file ends with the digest of an
//    uninterrupted GPU run, bit for bit (and two uninterrupted runs agree);
//  - two GPU trainers (NCCL with a GPU each, else gradients through the host) train to one GPU
//    trainer's weights within float tolerance.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/data_dir.hpp"
#include "../support/stop_and_capture.hpp"
#include "../support/temp_dir.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/comm/agreement.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/core/error.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/device_choice.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"

namespace conflux::train {
namespace {

Config gpu_config(int trainers, const std::string& device, std::vector<std::string> extra = {}) {
  std::vector<std::string> overrides = {
      fmt::format("cluster.trainers={}", trainers), "data.train_limit=1280", "data.test_limit=500",
      "train.epochs=1", fmt::format("train.device=\"{}\"", device)};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return load_config_file("configs/mnist_mlp.toml",
                          ConfigSources{overrides, testing::data_dir().string(), "test"});
}

// Every step's report (train.log_every = 1): the mean loss of the step over all trainers.
class LossRecorder final : public TrainingCallback {
 public:
  void on_step_report(const StepReport& report) override { losses.push_back(report.loss); }
  std::vector<double> losses;
};

struct RunResult {
  std::string digest;
  std::vector<float> params;
  std::vector<double> losses;
  double accuracy = 0;
  std::string device;
};

// Trains on world ranks [0, trainers) with train.device = `device`; the others wait. The result
// is valid on rank 0.
RunResult train_on(int trainers, const std::string& device, std::vector<std::string> extra = {}) {
  const auto world = comm::Communicator::world();
  const Config config = gpu_config(trainers, device, std::move(extra));
  const comm::RoleSplit split = comm::split_roles(world, trainers, world.size() - trainers);
  RunResult result;
  if (split.layout.role == comm::Role::kTrainer) {
    const DeviceChoice choice = choose_device(config, split.role_comm, nullptr);
    const data::SourceSplits data = open_training_data(config);
    Trainer trainer(TrainerSetup{config, split.role_comm, data, {}, nullptr, nullptr, choice});
    LossRecorder recorder;
    TrainingCallback* callbacks[] = {&recorder};
    const TrainSummary summary = trainer.run(callbacks);
    result.digest = summary.digest;
    result.accuracy = summary.final_test_accuracy;
    result.params.assign(trainer.model().params().begin(), trainer.model().params().end());
    result.losses = recorder.losses;
    result.device = trainer.device_name();
  }
  world.barrier();
  return result;
}

bool have_mnist() {
  return std::filesystem::exists(testing::data_dir() / "mnist");
}

// Skips on every rank alike: the ranks share the machine, hence the probe's answer.
#define REQUIRE_GPU_AND_MNIST()                                                         \
  do {                                                                                  \
    if (!have_mnist()) GTEST_SKIP() << "MNIST not found under " << testing::data_dir(); \
    const gpu::GpuProbe probe_ = gpu::probe_gpus();                                     \
    if (probe_.devices == 0) GTEST_SKIP() << "no GPU: " << probe_.reason;               \
  } while (0)

TEST(GpuTraining, DeviceChoiceAgreesOnEveryTrainer) {
  if (!have_mnist()) GTEST_SKIP() << "MNIST not found under " << testing::data_dir();
  const auto world = comm::Communicator::world();
  const int trainers = world.size();
  const comm::RoleSplit split = comm::split_roles(world, trainers, 0);
  const gpu::GpuProbe probe = gpu::probe_gpus();

  const DeviceChoice cpu = choose_device(gpu_config(trainers, "cpu"), split.role_comm, nullptr);
  EXPECT_EQ(cpu.device, ComputeDevice::kCpu);
  EXPECT_EQ(cpu.description, "CPU");

  const DeviceChoice automatic =
      choose_device(gpu_config(trainers, "auto"), split.role_comm, nullptr);
  if (probe.devices == 0) {
    EXPECT_EQ(automatic.device, ComputeDevice::kCpu);
    // "gpu" fails on every trainer with the same input error, inside an agreed phase.
    std::string message;
    try {
      comm::run_agreed(
          world, [&] { choose_device(gpu_config(trainers, "gpu"), split.role_comm, nullptr); });
      ADD_FAILURE() << "train.device = \"gpu\" without a GPU was accepted";
    } catch (const comm::AgreedFailure& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(e.failed_rank(), 0);
      message = e.what();
    }
    EXPECT_NE(message.find("train.device = \"gpu\" but no usable GPU"), std::string::npos)
        << message;
    EXPECT_NE(message.find(probe.reason), std::string::npos) << message;
  } else {
    EXPECT_EQ(automatic.device, ComputeDevice::kGpu);
    const comm::Communicator node = split.role_comm.split_node_local();
    EXPECT_EQ(automatic.gpu, gpu::select_device(node.rank(), probe.devices));
    EXPECT_EQ(gpu::current_device(), automatic.gpu);
    EXPECT_NE(automatic.description.find("GPU"), std::string::npos);
  }
}

TEST(GpuTraining, OneGpuTrainerReachesTheCpuLosses) {
  REQUIRE_GPU_AND_MNIST();
  const std::vector<std::string> every_step = {"train.log_every=1"};
  const RunResult cpu = train_on(1, "cpu", every_step);
  const RunResult gpu = train_on(1, "gpu", every_step);
  if (comm::Communicator::world().rank() != 0) return;
  EXPECT_EQ(cpu.device, "CPU");
  EXPECT_NE(gpu.device.find("GPU"), std::string::npos) << gpu.device;
  ASSERT_EQ(cpu.losses.size(), 10u);  // 1280 samples, batch 128
  ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
  for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
    EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 1e-3 * cpu.losses[i]) << "step " << i;
  }
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < cpu.params.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(gpu.params[i] - cpu.params[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(cpu.params[i])));
  }
  EXPECT_LT(max_diff, 1e-3 * max_abs) << "max |diff| " << max_diff << ", max |w| " << max_abs;
  EXPECT_NEAR(gpu.accuracy, cpu.accuracy, 0.01);
}

using testing::StopAndCapture;

TEST(GpuTraining, CheckpointResumeIsBitIdenticalOnTheGpu) {
  REQUIRE_GPU_AND_MNIST();
  const std::vector<std::string> two_epochs = {"train.epochs=2", "train.log_every=0"};
  const RunResult whole = train_on(1, "gpu", two_epochs);
  const RunResult again = train_on(1, "gpu", two_epochs);
  const auto world = comm::Communicator::world();
  std::vector<std::string> resumed;
  if (world.rank() == 0) {
    EXPECT_EQ(again.digest, whole.digest) << "two GPU runs differ";
    const comm::Communicator self = world.split(0, 0);
    const Config config = gpu_config(1, "gpu", two_epochs);
    const data::SourceSplits data = open_training_data(config);
    testing::TempDir dir;
    // 10 steps per epoch: stop mid-epoch 0, at the end of epoch 0, and mid-epoch 1.
    for (const std::size_t stop_at : {4u, 10u, 13u}) {
      const auto file = dir.path() / fmt::format("stop-{}.h5", stop_at);
      {
        const DeviceChoice choice = choose_device(config, self, nullptr);
        Trainer trainer(TrainerSetup{config, self, data, {}, nullptr, nullptr, choice});
        StopAndCapture stop(stop_at);
        TrainingCallback* callbacks[] = {&stop};
        const TrainSummary summary = trainer.run(callbacks);
        EXPECT_TRUE(summary.stopped);
        ckpt::write_checkpoint(file, stop.state);
      }
      const DeviceChoice choice = choose_device(config, self, nullptr);
      Trainer trainer(TrainerSetup{config, self, data, {}, nullptr, nullptr, choice});
      trainer.restore(ckpt::read_checkpoint(file), file.string());
      const TrainSummary summary = trainer.run({});
      EXPECT_FALSE(summary.stopped);
      EXPECT_EQ(summary.digest, whole.digest) << "stopped after " << stop_at << " steps";
    }
  } else {
    world.split(1, world.rank());
  }
  world.barrier();
}

// Losses of every step of one trainer on `self` with `config`; `save_to` (when not empty)
// receives the trained weights.
std::vector<double> losses_of(const Config& config, const comm::Communicator& self,
                              const std::filesystem::path& save_to = {}) {
  const data::SourceSplits data = open_training_data(config);
  const DeviceChoice choice = choose_device(config, self, nullptr);
  Trainer trainer(TrainerSetup{config, self, data, {}, nullptr, nullptr, choice});
  LossRecorder recorder;
  TrainingCallback* callbacks[] = {&recorder};
  trainer.run(callbacks);
  if (!save_to.empty()) model::save_model_hdf5(save_to, trainer.model());
  return recorder.losses;
}

// train.init_from reaches the GPU: a GPU trainer starting from a file's (trained) weights takes
// the CPU trainer's steps from those weights. The GPU model once uploaded a fresh model of
// run.seed instead, whose first loss is that of an untrained model (checked to be far above).
TEST(GpuTraining, InitFromReachesTheGpu) {
  REQUIRE_GPU_AND_MNIST();
  const auto world = comm::Communicator::world();
  if (world.rank() == 0) {
    const comm::Communicator self = world.split(0, 0);
    testing::TempDir dir;
    const auto weights = dir.path() / "trained.h5";
    const std::vector<std::string> every_step = {"train.log_every=1", "train.epochs=2"};
    const std::vector<double> fresh = losses_of(gpu_config(1, "cpu", every_step), self, weights);
    std::vector<std::string> from_file = {"train.log_every=1",
                                          fmt::format("train.init_from=\"{}\"", weights.string())};
    const std::vector<double> cpu = losses_of(gpu_config(1, "cpu", from_file), self);
    const std::vector<double> gpu = losses_of(gpu_config(1, "gpu", from_file), self);
    ASSERT_EQ(cpu.size(), 10u);
    ASSERT_EQ(gpu.size(), cpu.size());
    EXPECT_LT(cpu[0], 0.7 * fresh[0]) << "the file's weights must matter for this test";
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_NEAR(gpu[i], cpu[i], 1e-3 * cpu[i]) << "step " << i;
    }
  } else {
    world.split(1, world.rank());
  }
  world.barrier();
}

TEST(GpuTraining, TwoGpuTrainersMatchOne) {
  REQUIRE_GPU_AND_MNIST();
  if (comm::Communicator::world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const RunResult one = train_on(1, "gpu"), two = train_on(2, "gpu");
  if (comm::Communicator::world().rank() != 0) return;
  ASSERT_EQ(one.params.size(), two.params.size());
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < one.params.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(one.params[i] - two.params[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(one.params[i])));
  }
  // As for the CPU (training_test.cpp): only the order of float additions differs.
  EXPECT_LT(max_diff, 1e-4 * max_abs) << "max |diff| " << max_diff << ", max |w| " << max_abs;
  EXPECT_NEAR(one.accuracy, two.accuracy, 0.01);
}

}  // namespace
}  // namespace conflux::train
