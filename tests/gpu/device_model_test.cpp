// The device model (gpu/device_model.hpp) and optimiser on the host executor against the CPU
// model: every layer type's device kernels, channels-last layouts, fused ReLUs, the shared
// graph walk (a gradient fed by three layers), the loss with label smoothing and skipped
// samples, batch norm in both modes, dropout's masks, SGD, Nesterov, Adam, AdamW, clipping,
// and starting from the host model's current weights. This checks the indexing and sequencing
// of the GPU path without a GPU; the CUDA executor runs the same kernels (GPU tests).
// Tolerances: GEMMs and convolutions differ from OpenBLAS/oneDNN only in summation order, and
// batch-norm sums in the order of their partial sums: |got - want| <= 1e-4 |want| + 1e-5
// max|want| for one pass, 1e-3 after optimiser steps (the differences compound).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conflux/comm/gradient_buckets.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/gpu/device_model.hpp"
#include "conflux/gpu/device_optimizer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"
#include "device_model_cases.hpp"
#include "gpu_test_support.hpp"
#include "host_executor.hpp"

namespace conflux::gpu::testing {
namespace {

using model::Model;
using model::Tensor;
using Device = DeviceModel<HostExecutor>;
using model::SampleShape;

// One forward, loss and backward on both devices; returns the two losses.
struct StepResult {
  model::LossResult cpu, device;
};

StepResult step_both(Model& cpu, Device& device, const Batch& b, const model::Pass& pass,
                     double smoothing = 0.0) {
  const int n = b.images.batch();
  const float scale = 1.0f / static_cast<float>(n);
  const Tensor& logits = cpu.forward(b.images, pass);
  Tensor grad;
  StepResult r;
  r.cpu = model::softmax_cross_entropy(logits, b.labels, scale, &grad, smoothing);
  cpu.backward(grad);
  device.forward(b.images.data.data(), n, pass);
  device.loss(b.labels.data(), scale, smoothing, true);
  r.device = device.loss_result();
  device.backward();
  return r;
}

std::vector<float> device_grads(Device& d) {
  return {d.grads(), d.grads() + d.num_params()};
}
std::vector<float> device_state(Device& d) {
  std::vector<float> s(d.state_size());
  d.download_state(s);
  return s;
}

TEST(DeviceModel, EveryLayerTypeMatchesTheCpuModelInTraining) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 11);
  Device device(ex, cpu);
  const Batch b = random_batch({3, 9, 9}, 6, 5, 1);
  const model::Pass pass{.training = true, .seed = 42, .step = 3, .samples = b.samples};
  const StepResult r = step_both(cpu, device, b, pass);
  EXPECT_NEAR(r.device.loss_sum, r.cpu.loss_sum, 1e-5 * std::fabs(r.cpu.loss_sum));
  EXPECT_EQ(r.device.correct, r.cpu.correct);
  expect_close(device_grads(device), to_vector(cpu.grads()), "gradients");
  // Batch norm's running statistics were updated alike.
  expect_close(device_state(device), to_vector(cpu.state()), "state after the forward");
}

// Stands for the other trainers of a step: adds fixed values to every sum, as another
// trainer's batch would (the same on both devices).
class OtherTrainers final : public model::StatReducer {
 public:
  void sum(std::span<double> values) override {
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] += 0.25 * static_cast<double>(i % 7 + 1);
  }
};

TEST(DeviceModel, BatchNormSumsTheStatisticsOfEveryTrainer) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 18);
  Device device(ex, cpu);
  const Batch b = random_batch({3, 9, 9}, 4, 5, 8);
  OtherTrainers others;
  const model::Pass pass{
      .training = true, .seed = 3, .step = 1, .samples = b.samples, .reducer = &others};
  step_both(cpu, device, b, pass);
  expect_close(device_grads(device), to_vector(cpu.grads()), "gradients");
  expect_close(device_state(device), to_vector(cpu.state()), "running statistics");
}

// OtherTrainers' sums, added on the device in stream order (as NCCL adds them).
class OtherTrainersOnTheDevice final : public DeviceStatSum {
 public:
  void sum(double* values, std::size_t count) override {
    std::vector<double> host(values, values + count);
    OtherTrainers().sum(host);
    std::copy(host.begin(), host.end(), values);
  }
};

// train_step() with the statistics summed on the device gives the bits of the host reducer's
// forward, loss and backward.
TEST(DeviceModel, BatchNormSumsOnTheDeviceAsThroughTheHost) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 18);
  Device through_host(ex, cpu), on_device(ex, cpu);
  const Batch b = random_batch({3, 9, 9}, 4, 5, 8);
  OtherTrainers others;
  through_host.forward(
      b.images.data.data(), 4,
      {.training = true, .seed = 3, .step = 1, .samples = b.samples, .reducer = &others});
  through_host.loss(b.labels.data(), 0.25f, 0.0, true);
  through_host.backward();
  OtherTrainersOnTheDevice device_sum;
  on_device.set_step(1);
  on_device.train_step(
      {.images = b.images.data.data(),
       .labels = b.labels.data(),
       .samples = b.samples.data(),
       .n = 4},
      {.grad_scale = 0.25f, .label_smoothing = 0.0, .seed = 3, .device_sum = &device_sum});
  EXPECT_EQ(device_grads(on_device), device_grads(through_host));
  EXPECT_EQ(device_state(on_device), device_state(through_host));
}

TEST(DeviceModel, EvaluationUsesTheRunningStatisticsAndNoDropout) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 12);
  Device device(ex, cpu);
  const Batch train = random_batch({3, 9, 9}, 4, 5, 2);
  step_both(cpu, device, train, {.training = true, .seed = 1, .step = 0, .samples = train.samples});
  const Batch b = random_batch({3, 9, 9}, 5, 5, 3);
  const Tensor& want = cpu.forward(b.images);
  device.forward(b.images.data.data(), 5, model::Pass{});
  expect_close(device.download_logits(), want.data, "evaluation logits");
}

TEST(DeviceModel, FlattenKeepsTheCpuFeatureOrder) {
  HostExecutor ex;
  Model cpu(kFlattenMlp, {2, 4, 5}, 5, 13);
  Device device(ex, cpu);
  const Batch b = random_batch({2, 4, 5}, 3, 5, 4);
  step_both(cpu, device, b, {.training = true});
  expect_close(device_grads(device), to_vector(cpu.grads()), "gradients");
}

TEST(DeviceModel, LossWithLabelSmoothingAndSkippedSamples) {
  HostExecutor ex;
  Model cpu(kFlattenMlp, {2, 4, 5}, 5, 14);
  Device device(ex, cpu);
  Batch b = random_batch({2, 4, 5}, 6, 5, 5);
  b.labels[2] = model::kSkippedLabel;
  const StepResult r = step_both(cpu, device, b, {.training = true}, 0.1);
  EXPECT_EQ(r.device.skipped, 1);
  EXPECT_EQ(r.device.skipped, r.cpu.skipped);
  EXPECT_NEAR(r.device.loss_sum, r.cpu.loss_sum, 1e-5 * std::fabs(r.cpu.loss_sum));
  expect_close(device_grads(device), to_vector(cpu.grads()), "gradients");
  // A label outside the classes is an input error, as on the CPU.
  b.labels[0] = 9;
  device.forward(b.images.data.data(), 6, model::Pass{});
  device.loss(b.labels.data(), 1.0f, 0.0, false);
  EXPECT_THROW(device.loss_result(), InputError);
}

TEST(DeviceModel, StartsFromTheHostModelsCurrentWeights) {
  HostExecutor ex;
  Model cpu(kFlattenMlp, {2, 4, 5}, 5, 15);
  const Model other(kFlattenMlp, {2, 4, 5}, 5, 16);  // e.g. weights loaded by train.init_from
  std::copy(other.state().begin(), other.state().end(), cpu.state().begin());
  Device device(ex, cpu);
  EXPECT_EQ(device_state(device), to_vector(other.state()));
}

// bf16 activations as torch.autocast: every layer computes on bf16 values (products summed in
// fp32), the loss in fp32, parameters and their gradients in fp32. Against the fp32 CPU model
// the results differ by bf16's rounding (8 significant bits: 2^-9 relative per rounding,
// compounded over the layers): within 5e-2 of the largest magnitude, and not equal to the fp32
// device's (the bf16 path is taken).
TEST(DeviceModel, Bf16ActivationsTrackTheFp32Model) {
  HostExecutor ex;
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 19);
  Device device(ex, cpu, DType::kBf16);
  Device fp32(ex, cpu);
  const Batch b = random_batch({3, 9, 9}, 6, 5, 9);
  const model::Pass pass{.training = true, .seed = 4, .step = 2, .samples = b.samples};
  const StepResult r = step_both(cpu, device, b, pass);
  EXPECT_NEAR(r.device.loss_sum, r.cpu.loss_sum, 2e-2 * std::fabs(r.cpu.loss_sum));
  expect_close(device_grads(device), to_vector(cpu.grads()), "bf16 gradients", 0.0, 5e-2);
  fp32.forward(b.images.data.data(), 6, pass);
  device.forward(b.images.data.data(), 6, pass);
  EXPECT_NE(device.download_logits(), fp32.download_logits());
  // The master weights and the running statistics stay fp32: the same buffers as the CPU's.
  EXPECT_EQ(device.state_size(), cpu.state().size());
}

TEST(DeviceModel, Bf16RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f).bits, 0x3f80);             // a tie: to the even one
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1p-8f).bits, 0x3f82);         // a tie: up to the even one
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f + 0x1p-20f).bits, 0x3f81);  // above the tie: up
  EXPECT_EQ(to_float(to_bf16(-2.5f)), -2.5f);                  // exact values stay
  EXPECT_TRUE(std::isnan(to_float(to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(to_float(to_bf16(INFINITY))));
  EXPECT_EQ(to_bf16(3.0e38f).bits, 0x7f62);         // large finite values stay finite
  EXPECT_EQ(to_float(to_bf16(3.4e38f)), INFINITY);  // beyond the largest finite and a half ulp
}

TEST(DeviceModel, MakesNoKernelForAnUnknownType) {
  const LayerSpec spec{.type = "warp"};
  try {
    make_device_layer<HostExecutor>({.spec = &spec, .index = 0, .inputs = {{4}}, .output = {4}});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'warp' has no GPU kernel"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(has_device_kernels("conv2d"));
  EXPECT_FALSE(has_device_kernels("warp"));
  EXPECT_EQ(first_layer_without_device_kernels(kEveryLayer), -1);
}

// Optimiser steps on both devices from the same gradients: the same update. Adam's runs use
// a model without batch norm: a conv bias before batch norm has a gradient that is zero but
// for rounding noise, which Adam (without coupled decay) scales up to full steps of either
// sign, on the CPU too.
void train_both(const std::string& optimizer, const std::vector<LayerSpec>& specs,
                const model::SampleShape& sample, const std::vector<std::string>& extra = {}) {
  TrainSection train;
  train.optimizer = optimizer;
  train.lr = 0.05;
  train.momentum = 0.9;
  train.weight_decay = 0.01;
  for (const std::string& key : extra) {
    if (key == "nesterov") train.nesterov = true;
  }
  HostExecutor ex;
  Model cpu(specs, sample, 5, 21);
  Device device(ex, cpu);
  const auto cpu_opt = model::make_optimizer(train, cpu.params().size());
  DeviceOptimizer<HostExecutor> device_opt(ex, train, device.num_params());
  for (int s = 0; s < 3; ++s) {
    const Batch b = random_batch(sample, 4, 5, 30 + s);
    step_both(
        cpu, device, b,
        {.training = true, .seed = 7, .step = static_cast<std::uint64_t>(s), .samples = b.samples});
    const float norm = model::clip_grad_norm(cpu.grads(), 0.5f);
    device.clip_grads(0.5f);
    // The norm steps.jsonl reports (grad_norm): the same before-clipping norm as the CPU's.
    EXPECT_NEAR(device.clipped_norm(), norm, 1e-4 * norm) << optimizer << " step " << s;
    cpu_opt->step(cpu.params(), cpu.grads());
    device_opt.step(device.params(), device.grads());
  }
  expect_close(device_state(device), to_vector(cpu.state()), optimizer + " after 3 steps", 1e-3,
               1e-4);
  EXPECT_EQ(device_opt.steps(), cpu_opt->steps());
  // The saved state holds the device's buffers.
  model::OptimizerState want, got;
  cpu_opt->save(want);
  device_opt.save(got);
  ASSERT_EQ(got.buffers.size(), want.buffers.size());
  EXPECT_EQ(got.name, want.name);
  for (std::size_t i = 0; i < got.buffers.size(); ++i) {
    expect_close(got.buffers[i].values, want.buffers[i].values, got.buffers[i].name, 1e-3, 1e-4);
  }
}

TEST(DeviceOptimizer, SgdWithMomentumAndDecayMatchesTheCpu) {
  train_both("sgd", kEveryLayer, {3, 9, 9});
}
TEST(DeviceOptimizer, NesterovMatchesTheCpu) {
  train_both("sgd", kEveryLayer, {3, 9, 9}, {"nesterov"});
}
TEST(DeviceOptimizer, AdamMatchesTheCpu) {
  train_both("adam", kFlattenMlp, {2, 4, 5});
}
TEST(DeviceOptimizer, AdamWMatchesTheCpu) {
  train_both("adamw", kFlattenMlp, {2, 4, 5});
}

TEST(DeviceOptimizer, RestoreRefusesAnotherOptimisersState) {
  TrainSection train;
  train.optimizer = "adam";
  HostExecutor ex;
  DeviceOptimizer<HostExecutor> adam(ex, train, 10);
  model::OptimizerState sgd_state{.name = "sgd", .steps = 3, .buffers = {}};
  EXPECT_THROW(adam.restore(sgd_state), InputError);
}

TEST(DeviceModel, GradientSumOfSquaresMatchesTheCpu) {
  HostExecutor ex;
  Model cpu(kFlattenMlp, {2, 4, 5}, 5, 17);
  Device device(ex, cpu);
  const Batch b = random_batch({2, 4, 5}, 3, 5, 6);
  step_both(cpu, device, b, {.training = true});
  const double want = model::sum_of_squares(cpu.grads());
  EXPECT_NEAR(device.grad_sum_of_squares(), want, 1e-5 * want);
}

// A batch uploaded as 8-bit images and normalised by the device's input kernel gives exactly the
// logits of the floats SampleTransform::normalise makes on the host (data::normalised_pixel on
// both sides), channels-last images and flat inputs alike, in fp32 and bf16.
std::vector<std::uint8_t> random_pixels(std::size_t count, std::uint64_t seed) {
  Rng rng{seed, 7};
  std::vector<std::uint8_t> out(count);
  for (auto& p : out) p = static_cast<std::uint8_t>(rng.below(256));
  return out;
}

TEST(DeviceModel, PixelInputEqualsTheHostNormalisedFloats) {
  data::TransformOptions options;
  options.mean = {0.485f, 0.456f, 0.406f};
  options.std = {0.229f, 0.224f, 0.225f};
  const data::SampleTransform transform(options, data::ImageShape{3, 9, 9});
  const int n = 4;
  const std::vector<std::uint8_t> pixels =
      random_pixels(static_cast<std::size_t>(n) * 3 * 9 * 9, 3);
  Tensor floats;
  floats.resize({n, 3, 9, 9});
  transform.normalise(pixels.data(), n, floats.data.data());
  HostExecutor ex;
  const Model cpu(kEveryLayer, {3, 9, 9}, 5, 31);
  for (const DType dtype : {DType::kF32, DType::kBf16}) {
    Device device(ex, cpu, dtype);
    device.set_pixel_normalisation(transform.pixel_scale(), transform.pixel_shift());
    device.forward(floats.data.data(), n, model::Pass{});
    const std::vector<float> want = device.download_logits();
    device.forward(pixels.data(), n, model::Pass{});
    EXPECT_EQ(device.download_logits(), want) << "dtype " << static_cast<int>(dtype);
  }
}

TEST(DeviceModel, PixelInputOfAFlatModelUsesItsChannelPlanes) {
  const std::vector<LayerSpec> mlp{
      {.type = "linear", .out = 4}, {.type = "relu"}, {.type = "linear", .out = 3}};
  HostExecutor ex;
  const Model cpu(mlp, {12}, 3, 32);  // 3 channels of 4 values each
  Device device(ex, cpu);
  const std::vector<float> scale{0.5f, 0.25f, 2.0f}, shift{-1.0f, 0.0f, 3.0f};
  device.set_pixel_normalisation(scale, shift);
  const std::vector<std::uint8_t> pixels = random_pixels(2 * 12, 4);
  std::vector<float> floats(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const std::size_t c = (i % 12) / 4;
    floats[i] = static_cast<float>(pixels[i]) * scale[c] + shift[c];
  }
  device.forward(floats.data(), 2, model::Pass{});
  const std::vector<float> want = device.download_logits();
  device.forward(pixels.data(), 2, model::Pass{});
  EXPECT_EQ(device.download_logits(), want);
  // Channels that do not divide the input, or unequal lengths, are refused; pixels before
  // any factors are a bug.
  const std::vector<float> five(5, 1.0f), three(3, 1.0f);
  EXPECT_THROW(device.set_pixel_normalisation(five, five), InputError);
  EXPECT_THROW(device.set_pixel_normalisation(three, five), InputError);
  Device fresh(ex, cpu);
  EXPECT_THROW(fresh.forward(pixels.data(), 2, model::Pass{}), RuntimeError);
}

// A training step leaves its loss on the device: take_losses() returns the sum of the steps
// since the last call, bit for bit the per-step results summed as the trainer summed them, and
// reports a label out of range there.
TEST(DeviceModel, LossesAccumulateOnTheDeviceUntilTaken) {
  HostExecutor ex;
  const Model cpu(kFlattenMlp, {2, 4, 5}, 5, 33);
  Device device(ex, cpu);
  EXPECT_EQ(device.take_losses().loss_sum, 0.0);  // nothing accumulated yet
  double want_loss = 0.0;
  int want_correct = 0, want_skipped = 0;
  for (std::uint64_t step = 0; step < 3; ++step) {
    Batch b = random_batch({2, 4, 5}, 6, 5, 40 + step);
    if (step == 1) b.labels[3] = model::kSkippedLabel;
    device.forward(b.images.data.data(), 6, model::Pass{.training = true});
    device.loss(b.labels.data(), 1.0f / 6, 0.0, true);
    device.accumulate_loss();
    const model::LossResult one = device.loss_result();
    want_loss += one.loss_sum;
    want_correct += one.correct;
    want_skipped += one.skipped;
  }
  const model::LossResult got = device.take_losses();
  EXPECT_EQ(got.loss_sum, want_loss);
  EXPECT_EQ(got.correct, want_correct);
  EXPECT_EQ(got.skipped, 1);
  EXPECT_EQ(want_skipped, 1);
  const model::LossResult again = device.take_losses();  // taken: zero until the next step
  EXPECT_EQ(again.loss_sum, 0.0);
  EXPECT_EQ(again.correct, 0);
  Batch bad = random_batch({2, 4, 5}, 6, 5, 50);
  bad.labels[4] = 9;
  device.forward(bad.images.data.data(), 6, model::Pass{.training = true});
  device.loss(bad.labels.data(), 1.0f / 6, 0.0, true);
  device.accumulate_loss();
  EXPECT_THROW(device.take_losses(), InputError);
}

// Backward announces each layer once its gradients are written, last layer first: the model's
// buckets (its slices in the plan's reverse order) each complete exactly once per pass and
// together cover every gradient, as a bucketed NCCL exchange needs.
TEST(DeviceModel, BackwardAnnouncesLayersSoEveryBucketCompletesOnce) {
  HostExecutor ex;
  const Model cpu(kEveryLayer, {3, 9, 9}, 5, 34);
  Device device(ex, cpu);
  std::vector<comm::GradientRange> layers;
  for (const model::LayerSlice& s : cpu.layer_slices()) {
    layers.push_back({s.param_offset, s.param_offset + s.param_count});
  }
  const std::vector<std::size_t> backward(cpu.plan().order.rbegin(), cpu.plan().order.rend());
  comm::GradientBuckets buckets(layers, backward, 64);  // small: several buckets
  ASSERT_GT(buckets.buckets().size(), 2u);
  const Batch b = random_batch({3, 9, 9}, 4, 5, 6);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<comm::GradientRange> completed;
    std::vector<std::size_t> announced;
    device.forward(b.images.data.data(), 4, {.training = true, .seed = 1, .samples = b.samples});
    device.loss(b.labels.data(), 0.25f, 0.0, true);
    device.backward([&](std::size_t layer) {
      announced.push_back(layer);
      if (const auto done = buckets.layer_done(layer)) completed.push_back(*done);
    });
    EXPECT_TRUE(std::is_sorted(announced.rbegin(), announced.rend()));  // last layer first
    EXPECT_EQ(completed, buckets.buckets());
    std::size_t covered = 0;
    for (const comm::GradientRange& r : completed) covered += r.size();
    EXPECT_EQ(covered, device.num_params());
    buckets.reset();
  }
}

}  // namespace
}  // namespace conflux::gpu::testing
