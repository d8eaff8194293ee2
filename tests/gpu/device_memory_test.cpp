// The device model's memory plan on the host executor (HostMemory counts what the same code
// holds in device memory): backward keeps only the gradients still to be read, and a fused
// ReLU's gated gradient is no buffer of its layer.

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "conflux/gpu/device_model.hpp"
#include "conflux/model/model.hpp"
#include "device_model_cases.hpp"
#include "host_executor.hpp"

namespace conflux::gpu::testing {
namespace {

using model::Model;
using Device = DeviceModel<HostExecutor>;

// One training forward, loss and backward of `b` (8 samples).
void train_pass(Device& device, const Batch& b) {
  device.forward(b.images.data.data(), 8, model::Pass{.training = true});
  device.loss(b.labels.data(), 0.125f, 0.0, true);
  device.backward();
}

// Backward keeps only the gradients still to be read: on a chain of eight convolutions of one
// shape, a training pass (after the first, which allocates) holds at most a few activation-sized
// gradient buffers beyond the activations, not one per layer; results are unchanged (every
// other test here runs through the same plan).
TEST(DeviceModel, BackwardReusesGradientBuffers) {
  std::vector<LayerSpec> chain;
  for (int i = 0; i < 8; ++i)
    chain.push_back({.type = "conv2d", .out = 4, .kernel = 3, .padding = 1});
  chain.push_back({.type = "flatten"});
  chain.push_back({.type = "linear", .out = 3});
  HostExecutor ex;
  const Model cpu(chain, {4, 16, 16}, 3, 35);
  const Batch b = random_batch({4, 16, 16}, 8, 3, 7);
  const std::size_t before = HostMemory::live;
  Device device(ex, cpu);
  const auto pass = [&] { train_pass(device, b); };
  pass();  // sizes every buffer
  const std::size_t settled = HostMemory::live;
  HostMemory::reset_peak();
  pass();
  const std::size_t activation = 8 * 4 * 16 * 16 * sizeof(float);
  EXPECT_LE(HostMemory::peak, settled);  // nothing allocated after the first pass
  // Held after a pass: parameters and their gradients, the input and 9 activations of that
  // size, at most 3 gradient buffers (one per layer would be 9), and small buffers (the
  // logits, the loss) within 16 KiB.
  const std::size_t parameters = 2 * device.num_params() * sizeof(float);
  EXPECT_LE(settled - before, parameters + (10 + 3) * activation + (16 << 10));
}

// Four blocks of convolution + ReLU (fused into the convolution) and convolution, batch norm
// + ReLU (fused into the batch norm): a training pass holds the input, three activations per
// block and a few gradient buffers. A fused ReLU's gated gradient is not a buffer of its layer:
// the convolution gates into the executor's one scratch buffer (one activation), batch norm
// where it reads dy (nothing); a buffer per fusing layer would be 8 more activations.
TEST(DeviceModel, FusedRelusKeepNoGatedBufferPerLayer) {
  std::vector<LayerSpec> chain;
  for (int i = 0; i < 4; ++i) {
    chain.push_back({.type = "conv2d", .out = 4, .kernel = 3, .padding = 1});
    chain.push_back({.type = "relu"});
    chain.push_back({.type = "conv2d", .out = 4, .kernel = 3, .padding = 1});
    chain.push_back({.type = "batchnorm"});
    chain.push_back({.type = "relu"});
  }
  chain.push_back({.type = "flatten"});
  chain.push_back({.type = "linear", .out = 3});
  HostExecutor ex;
  const Model cpu(chain, {4, 16, 16}, 3, 36);
  const Batch b = random_batch({4, 16, 16}, 8, 3, 9);
  const std::size_t before = HostMemory::live;
  Device device(ex, cpu);
  train_pass(device, b);
  train_pass(device, b);
  const std::size_t activation = 8 * 4 * 16 * 16 * sizeof(float);
  const std::size_t parameters = 2 * device.num_params() * sizeof(float);
  // The input, 12 activations, 3 gradient buffers, the scratch; small buffers (the channel
  // sums' partials, the convolutions' weight copies, the statistics) within 48 KiB.
  EXPECT_LE(HostMemory::live - before, parameters + (1 + 12 + 3 + 1) * activation + (48 << 10));
}

}  // namespace
}  // namespace conflux::gpu::testing
