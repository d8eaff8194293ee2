// Training steps replayed as captured graphs (gpu/step_graphs.hpp) on the host executor, which
// captures as a CUDA stream does (calls recorded with the arguments of the capture, replayed
// by launch()): a replayed step must compute what the same step run kernel by kernel computes,
// so everything that changes from step to step (the step number of dropout's masks, the
// batch) must be read from device memory, never baked into a kernel's arguments. On a GPU,
// CudaModel.GraphReplaysGiveTheBitsOfKernelByKernelSteps checks the same with CUDA graphs.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/gpu/device_model.hpp"
#include "conflux/gpu/device_optimizer.hpp"
#include "conflux/gpu/step_graphs.hpp"
#include "conflux/model/model.hpp"
#include "device_model_cases.hpp"
#include "host_executor.hpp"

namespace conflux::gpu::testing {
namespace {

using model::Model;
using Device = DeviceModel<HostExecutor>;

// A staging slot: a batch's images, labels and sample indices in "device" memory, refilled
// in place every other step as the trainer's are.
struct Slot {
  HostBuffer<float> images;
  HostBuffer<model::Label> labels;
  HostBuffer<std::uint32_t> samples;
  int n = 0;
  explicit Slot(const Batch& b)
      : images(b.images.data.size()),
        labels(b.labels.size()),
        samples(b.samples.size()),
        n(b.images.batch()) {
    fill(b);
  }
  void fill(const Batch& b) {
    std::copy(b.images.data.begin(), b.images.data.end(), images.data());
    std::copy(b.labels.begin(), b.labels.end(), labels.data());
    std::copy(b.samples.begin(), b.samples.end(), samples.data());
  }
  StepBatch batch() const {
    return {.images = images.data(), .labels = labels.data(), .samples = samples.data(), .n = n};
  }
};

struct Result {
  std::vector<float> state;
  double loss_sum = 0.0;
  std::size_t captures = 0, replays = 0;
  std::string failure;
};

// Twelve SGD steps of kEveryLayer (dropout, batch norm, every layer type) over two slots, with
// an evaluation pass of a larger batch after step 4 (it grows the activations: graphs captured
// before point at freed buffers and must not be replayed).
Result twelve_steps(bool graphs) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 17);
  TrainSection train;
  train.optimizer = "sgd";
  train.lr = 0.05;
  train.momentum = 0.9;
  Device device(ex, cpu);
  DeviceOptimizer<HostExecutor> optimizer(ex, train, device.num_params());
  StepGraphs<HostExecutor> replays(ex);
  std::vector<Slot> slots;
  for (int k = 0; k < 2; ++k) slots.emplace_back(random_batch({3, 9, 9}, 4, 5, 70 + k));
  const Batch larger = random_batch({3, 9, 9}, 9, 5, 79);
  for (int s = 0; s < 12; ++s) {
    Slot& slot = slots[static_cast<std::size_t>(s % 2)];
    slot.fill(random_batch({3, 9, 9}, 4, 5, 80 + s));
    device.set_step(static_cast<std::uint64_t>(s));
    const StepOptions options{.grad_scale = 0.25f, .label_smoothing = 0.1, .seed = 3};
    const auto step = [&] { device.train_step(slot.batch(), options); };
    if (graphs) {
      replays.run({.input = slot.images.data(),
                   .labels = slot.labels.data(),
                   .samples = slot.samples.data(),
                   .n = slot.n,
                   .grad_scale = options.grad_scale,
                   .seed = options.seed},
                  step);
    } else {
      step();
    }
    optimizer.step(device.params(), device.grads());
    if (s == 4) device.forward(larger.images.data.data(), 9, model::Pass{});
  }
  Result r;
  r.loss_sum = device.take_losses().loss_sum;
  r.state.resize(device.state_size());
  device.download_state(r.state);
  r.captures = replays.captures();
  r.replays = replays.replays();
  r.failure = replays.failure();
  return r;
}

TEST(StepGraphs, ReplayedStepsGiveTheBitsOfKernelByKernelSteps) {
  const Result eager = twelve_steps(false);
  const Result captured = twelve_steps(true);
  EXPECT_EQ(captured.failure, "");
  // Steps 0-1 run eagerly (the first allocates; the second finds memory changed), 2 is the
  // first steady run of slot 0, 3 and 4 capture; the evaluation drops both graphs, 5 and 6 run
  // eagerly again, 7 and 8 capture anew, 9-11 replay graphs captured at earlier steps.
  EXPECT_EQ(captured.captures, 4u);
  EXPECT_EQ(captured.replays, 7u);
  EXPECT_EQ(captured.loss_sum, eager.loss_sum);
  EXPECT_EQ(captured.state, eager.state);
}

TEST(StepGraphs, AStepThatCannotBeCapturedRunsEagerlyAndTurnsGraphsOff) {
  HostExecutor ex;
  StepGraphs<HostExecutor> graphs(ex);
  HostBuffer<float> value(1);
  float host = 0.0f;
  int runs = 0;
  for (int s = 0; s < 4; ++s) {
    host = static_cast<float>(s);
    graphs.run({.n = 1}, [&] {
      ex.upload(value.data(), &host, 1);  // a host transfer: refused while capturing
      ++runs;
    });
    EXPECT_EQ(value.data()[0], static_cast<float>(s)) << "step " << s;
  }
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(graphs.captures(), 0u);
  EXPECT_NE(graphs.failure().find("host transfer"), std::string::npos) << graphs.failure();
}

TEST(StepGraphs, AnAllocationWhileCapturingIsRetriedOnceSteady) {
  HostExecutor ex;
  StepGraphs<HostExecutor> graphs(ex);
  int call = 0;
  for (int s = 0; s < 3; ++s) {
    graphs.run({.n = 2}, [&] {
      // Steady after its first (eager) run, then allocates while being captured; the run
      // after that capture allocates nothing, and the next capture holds.
      if (++call == 2) HostBuffer<float> grown(16);
    });
  }
  EXPECT_EQ(call, 4);  // eager, failed capture, eager again, capture
  EXPECT_EQ(graphs.captures(), 1u);
  EXPECT_EQ(graphs.failure(), "");
}

TEST(StepGraphs, CapturesThatKeepAllocatingTurnGraphsOff) {
  HostExecutor ex;
  StepGraphs<HostExecutor> graphs(ex);
  int call = 0;
  for (int s = 0; s < 8; ++s) {
    graphs.run({.n = 2}, [&] {
      if (++call % 2 == 0) HostBuffer<float> grown(16);  // every capture attempt allocates
    });
  }
  EXPECT_EQ(graphs.captures(), 0u);
  EXPECT_NE(graphs.failure().find("allocated or freed while capturing"), std::string::npos)
      << graphs.failure();
}

}  // namespace
}  // namespace conflux::gpu::testing
