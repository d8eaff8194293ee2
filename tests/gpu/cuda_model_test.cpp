// The device model on a GPU (gpu::CudaModel: the device kernels on the CUDA executor, cuBLAS
// and cuDNN) against the CPU model on random inputs: every layer type in one graph, the loss,
// the optimisers and clipping, evaluation, determinism (two runs, the same bits) and resume
// (download, restore, the same bits). Skipped with "no GPU: <reason>" without one.
// Tolerances, fp32 with TF32 off: one pass |got - want| <= 1e-4 |want| + 1e-5 max|want|
// (cuBLAS, cuDNN and the device's fused multiply-adds sum and round in other orders than
// OpenBLAS and oneDNN); after optimiser steps 1e-3 and 1e-4.

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"

#if CONFLUX_HAVE_CUDA

#include <cmath>
#include <string>
#include <vector>

#include "conflux/gpu/cuda_model.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"
#include "device_model_cases.hpp"

namespace conflux::gpu::testing {
namespace {

using model::Model;

// A batch in device memory.
struct DeviceBatch {
  DeviceBuffer<float> images;
  DeviceBuffer<model::Label> labels;
  DeviceBuffer<std::uint32_t> samples;
  int n = 0;
  explicit DeviceBatch(const Batch& b)
      : images(b.images.data.size()),
        labels(b.labels.size()),
        samples(b.samples.size()),
        n(b.images.batch()) {
    fill(b);
  }
  // Replaces the contents with `b`'s (the same sizes), as a staging slot is refilled.
  void fill(const Batch& b) {
    copy_to_device(images.data(), b.images.data.data(), b.images.data.size(), nullptr);
    copy_to_device(labels.data(), b.labels.data(), b.labels.size(), nullptr);
    copy_to_device(samples.data(), b.samples.data(), b.samples.size(), nullptr);
    CONFLUX_CUDA_CHECK(cudaDeviceSynchronize());
  }
  // The training step of this batch for `pass`'s seed and step.
  TrainStep step(float grad_scale, const model::Pass& pass) const {
    return {.batch = {.images = images.data(),
                      .labels = labels.data(),
                      .samples = samples.empty() ? nullptr : samples.data(),
                      .n = n},
            .grad_scale = grad_scale,
            .seed = pass.seed,
            .step = pass.step,
            .reducer = nullptr,
            .device_sum = nullptr,
            .layer_done = {}};
  }
};

std::vector<float> grads_of(CudaModel& m) {
  std::vector<float> g(m.num_params());
  m.synchronize();
  CONFLUX_CUDA_CHECK(
      cudaMemcpy(g.data(), m.grads(), g.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return g;
}

std::vector<float> state_of(CudaModel& m) {
  std::vector<float> s(m.state_size());
  m.download_state(s);
  return s;
}

TrainSection train_section(const std::string& optimizer) {
  TrainSection t;
  t.optimizer = optimizer;
  t.lr = 0.05;
  t.momentum = 0.9;
  t.weight_decay = 0.01;
  t.label_smoothing = 0.1;
  t.clip_grad_norm = 0.5;
  return t;
}

TEST(CudaModel, EveryLayerTypeMatchesTheCpuModel) {
  CONFLUX_REQUIRE_GPU();
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 11);
  CudaModel gpu(cpu, train_section("sgd"));
  const Batch b = random_batch({3, 9, 9}, 6, 5, 1);
  const model::Pass pass{.training = true, .seed = 42, .step = 3, .samples = b.samples};
  Tensor grad;
  const model::LossResult want =
      model::softmax_cross_entropy(cpu.forward(b.images, pass), b.labels, 1.0f / 6, &grad, 0.1);
  cpu.backward(grad);
  const DeviceBatch d(b);
  gpu.compute(d.step(1.0f / 6, pass));
  const model::LossResult got = gpu.loss_result();
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * std::fabs(want.loss_sum));
  expect_close(grads_of(gpu), to_vector(cpu.grads()), "gradients");
  expect_close(state_of(gpu), to_vector(cpu.state()), "running statistics");
}

// tf32 and bf16 against the fp32 CPU model: TF32 rounds the products' inputs to 10 mantissa
// bits (within 5e-3 of the largest magnitude here), bf16 the activations to 8 (5e-2).
void check_precision(Precision precision, double tolerance,
                     const std::vector<LayerSpec>& specs = kEveryLayer,
                     const model::SampleShape& sample = {3, 9, 9}) {
  Model cpu(specs, sample, 5, 13);
  TrainSection t = train_section("sgd");
  t.label_smoothing = 0.0;
  CudaModel gpu(cpu, t, {.precision = precision});
  const Batch b = random_batch(sample, 6, 5, 3);
  const model::Pass pass{.training = true, .seed = 42, .step = 3, .samples = b.samples};
  Tensor grad;
  model::softmax_cross_entropy(cpu.forward(b.images, pass), b.labels, 1.0f / 6, &grad);
  cpu.backward(grad);
  const DeviceBatch d(b);
  gpu.compute(d.step(1.0f / 6, pass));
  expect_close(grads_of(gpu), to_vector(cpu.grads()), to_string(precision), 0.0, tolerance);
}

TEST(CudaModel, Tf32TracksTheFp32Model) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kTf32, 5e-3);
}

TEST(CudaModel, Bf16TracksTheFp32Model) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kBf16, 5e-2);
}

// cuBLASLt's bias and bias + ReLU epilogues in bf16 and TF32: linear layers of 420 and 35
// weights (the bf16 bias copies then sit at padded, 16-byte aligned offsets).
TEST(CudaModel, LinearEpiloguesTrackTheFp32Model) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kBf16, 5e-2, kFlattenMlp, {2, 4, 5});
  check_precision(Precision::kTf32, 5e-3, kFlattenMlp, {2, 4, 5});
}

TEST(CudaModel, EvaluationMatchesTheCpuModel) {
  CONFLUX_REQUIRE_GPU();
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 12);
  CudaModel gpu(cpu, train_section("sgd"));
  const Batch b = random_batch({3, 9, 9}, 7, 5, 2);
  const model::LossResult want =
      model::softmax_cross_entropy(cpu.forward(b.images), b.labels, 0, nullptr);
  const DeviceBatch d(b);
  const model::LossResult got = gpu.evaluate(d.images.data(), d.labels.data(), d.n);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * std::fabs(want.loss_sum));
  EXPECT_EQ(got.correct, want.correct);
}

// Three steps with clipping and smoothing; returns the GPU's state.
std::vector<float> train_three(const std::string& optimizer, const std::vector<LayerSpec>& specs,
                               const model::SampleShape& sample) {
  Model cpu(specs, sample, 5, 21);
  const TrainSection t = train_section(optimizer);
  CudaModel gpu(cpu, t);
  const auto cpu_opt = model::make_optimizer(t, cpu.params().size());
  for (int s = 0; s < 3; ++s) {
    const Batch b = random_batch(sample, 4, 5, 30 + s);
    const model::Pass pass{
        .training = true, .seed = 7, .step = static_cast<std::uint64_t>(s), .samples = b.samples};
    Tensor grad;
    model::softmax_cross_entropy(cpu.forward(b.images, pass), b.labels, 0.25f, &grad,
                                 t.label_smoothing);
    cpu.backward(grad);
    const float norm = model::clip_grad_norm(cpu.grads(), static_cast<float>(t.clip_grad_norm));
    cpu_opt->step(cpu.params(), cpu.grads());
    const DeviceBatch d(b);
    gpu.compute(d.step(0.25f, pass));
    gpu.apply(t.lr);
    EXPECT_NEAR(gpu.clipped_grad_norm(), norm, 1e-3 * norm) << optimizer << " step " << s;
  }
  std::vector<float> state = state_of(gpu);
  expect_close(state, to_vector(cpu.state()), optimizer + " after 3 steps", 1e-3, 1e-4);
  return state;
}

TEST(CudaModel, SgdStepsMatchTheCpu) {
  CONFLUX_REQUIRE_GPU();
  train_three("sgd", kEveryLayer, {3, 9, 9});
}

TEST(CudaModel, AdamWStepsMatchTheCpu) {
  CONFLUX_REQUIRE_GPU();
  train_three("adamw", kFlattenMlp, {2, 4, 5});
}

TEST(CudaModel, TwoRunsGiveTheSameBits) {
  CONFLUX_REQUIRE_GPU();
  EXPECT_EQ(train_three("sgd", kEveryLayer, {3, 9, 9}), train_three("sgd", kEveryLayer, {3, 9, 9}));
}

TEST(CudaModel, RestoreResumesBitIdentically) {
  CONFLUX_REQUIRE_GPU();
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 31);
  const TrainSection t = train_section("adamw");
  const auto step = [&](CudaModel& m, int s) {
    const Batch b = random_batch({3, 9, 9}, 4, 5, 40 + s);
    const DeviceBatch d(b);
    m.compute(d.step(0.25f, {.training = true,
                             .seed = 1,
                             .step = static_cast<std::uint64_t>(s),
                             .samples = b.samples}));
    m.apply(t.lr);
  };
  CudaModel whole(cpu, t);
  for (int s = 0; s < 4; ++s) step(whole, s);
  CudaModel first(cpu, t);
  for (int s = 0; s < 2; ++s) step(first, s);
  std::vector<float> state(first.state_size());
  model::OptimizerState optimizer;
  first.download(state, optimizer);
  CudaModel resumed(cpu, t);
  resumed.restore(state, optimizer);
  for (int s = 2; s < 4; ++s) step(resumed, s);
  EXPECT_EQ(state_of(resumed), state_of(whole));
}

// Six steps of new batches in the same two device buffers (as the trainer's staging slots),
// dropout drawn per step: with graphs the steady steps are captured and replayed, and the
// weights are the same bits as kernel by kernel.
std::vector<float> six_steps(bool graphs, GraphStats* stats) {
  Model cpu(kEveryLayer, {3, 9, 9}, 5, 33);
  const TrainSection t = train_section("sgd");
  CudaModel gpu(cpu, t, {.graphs = graphs});
  std::vector<DeviceBatch> slots;
  for (int k = 0; k < 2; ++k) slots.emplace_back(random_batch({3, 9, 9}, 4, 5, 50 + k));
  for (int s = 0; s < 6; ++s) {
    const Batch b = random_batch({3, 9, 9}, 4, 5, 60 + s);
    DeviceBatch& d = slots[static_cast<std::size_t>(s % 2)];
    gpu.synchronize();  // the slot's last step has read it
    d.fill(b);
    gpu.compute(d.step(0.25f, {.training = true,
                               .seed = 5,
                               .step = static_cast<std::uint64_t>(s),
                               .samples = b.samples}));
    gpu.apply(t.lr);
  }
  *stats = gpu.graph_stats();
  return state_of(gpu);
}

TEST(CudaModel, GraphReplaysGiveTheBitsOfKernelByKernelSteps) {
  CONFLUX_REQUIRE_GPU();
  GraphStats eager, captured;
  const std::vector<float> want = six_steps(false, &eager);
  const std::vector<float> got = six_steps(true, &captured);
  EXPECT_EQ(captured.failure, "");
  EXPECT_EQ(eager.replays, 0u);
  EXPECT_EQ(captured.captures, 2u);  // one graph per slot
  EXPECT_GE(captured.replays, 2u);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace conflux::gpu::testing

#else

TEST(CudaModel, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA (make CUDA=1)";
}

#endif
