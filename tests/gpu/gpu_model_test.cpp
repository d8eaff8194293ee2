// GpuModel against model::Model: same layout and initial parameters, forward / loss / backward
// on random batches, the parameters after several SGD steps with momentum and weight decay,
// external dL/dlogits, empty and growing batches, and bit-identical resume from downloaded
// parameters and momentum. Tolerances as in kernels_test.cpp: GEMM-based values within relative
// 1e-4 + absolute 1e-5 times the tensor's largest magnitude; parameters after 5 steps the same
// (the step moves them by lr * gradient, so the differences stay at GEMM rounding level).
// Skipped without a GPU; construction fails cleanly without one.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/gpu_model.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/sgd.hpp"
#include "gpu_test_support.hpp"

#if CONFLUX_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "conflux/gpu/handles.hpp"
#endif

namespace conflux::gpu {
namespace {

using namespace conflux::gpu::testing;  // NOLINT(google-build-using-namespace)

TEST(GpuModel, ConstructionWithoutGpuThrowsRuntimeError) {
  if (probe_gpus().devices > 0) GTEST_SKIP() << "a GPU is present";
  try {
    GpuModel model(mlp_specs(), mlp_input(), 10, 1);
    FAIL() << "constructed a GPU model without a GPU";
  } catch (const RuntimeError& e) {
    if (!built_with_cuda()) {
      EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos) << e.what();
    }
  }
}

#if CONFLUX_HAVE_CUDA

// A batch in device memory.
struct DeviceBatch {
  DeviceBuffer<float> images;
  DeviceBuffer<model::Label> labels;
};

DeviceBatch upload(const Batch& b, cudaStream_t stream) {
  DeviceBatch d{DeviceBuffer<float>(b.images.size()), DeviceBuffer<model::Label>(b.labels.size())};
  d.images.copy_from_host(b.images, stream);
  d.labels.copy_from_host(b.labels, stream);
  return d;
}

std::vector<float> download(const float* device, std::size_t count, cudaStream_t stream) {
  std::vector<float> host(count);
  copy_to_host(host.data(), device, count, stream);
  CONFLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

std::vector<float> params_of(const GpuModel& m) {
  std::vector<float> p(m.num_params());
  m.download_params(p);
  return p;
}

TEST(GpuModel, SameLayoutAndInitialParametersAsCpuModel) {
  CONFLUX_REQUIRE_GPU();
  const model::Model cpu(cnn_specs(), cnn_input(), 10, 42);
  const GpuModel gpu(cnn_specs(), cnn_input(), 10, 42);
  ASSERT_EQ(gpu.param_infos().size(), cpu.param_infos().size());
  for (std::size_t i = 0; i < cpu.param_infos().size(); ++i) {
    EXPECT_EQ(gpu.param_infos()[i].name, cpu.param_infos()[i].name);
    EXPECT_EQ(gpu.param_infos()[i].offset, cpu.param_infos()[i].offset);
    EXPECT_EQ(gpu.param_infos()[i].shape, cpu.param_infos()[i].shape);
  }
  EXPECT_EQ(gpu.summary(), cpu.summary());
  EXPECT_EQ(gpu.params().size, cpu.params().size());
  expect_bits(params_of(gpu), {cpu.params().begin(), cpu.params().end()}, "initial params");
  EXPECT_EQ(gpu.num_classes(), 10);
  EXPECT_EQ(gpu.input_shape(), cnn_input());
  EXPECT_FALSE(gpu.sgd_started());
}

void check_training_matches_cpu(const std::vector<LayerSpec>& specs,
                                const model::SampleShape& input) {
  const int classes = 10;
  const model::SgdOptions opt{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f};
  model::Model cpu(specs, input, classes, 9);
  model::Sgd sgd(opt, cpu.params().size());
  GpuModel gpu(specs, input, classes, 9, opt);
  const auto stream = static_cast<cudaStream_t>(gpu.compute_stream());
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    const int n = step == 1 ? 32 : 8;  // a larger batch grows the buffers
    const Batch batch = make_batch(input, n, classes, 50 + step);
    const model::Tensor x = batch_tensor(input, n, batch.images);  // kept for backward
    const model::Tensor& logits = cpu.forward(x);
    model::Tensor grad;
    const model::LossResult want =
        model::softmax_cross_entropy(logits, batch.labels, 1.0f / n, &grad);
    cpu.backward(grad);
    sgd.step(cpu.params(), cpu.grads());

    const DeviceBatch d = upload(batch, stream);
    const float* got_logits = gpu.forward(d.images.data(), n);
    expect_close(download(got_logits, logits.size(), stream), logits.data, "logits");
    gpu.loss_and_grad_async(d.labels.data(), 1.0f / n);
    gpu.backward();
    std::vector<float> grads(gpu.num_params());
    gpu.download_grads(grads);
    expect_close(grads, {cpu.grads().begin(), cpu.grads().end()}, "grads");
    gpu.sgd_step();
    const model::LossResult got = gpu.loss_result();
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * std::max(1.0, want.loss_sum));
    EXPECT_EQ(got.correct, want.correct);
    expect_close(params_of(gpu), {cpu.params().begin(), cpu.params().end()}, "params");
  }
  std::vector<float> velocity(gpu.num_params());
  gpu.download_velocity(velocity);
  expect_close(velocity, {sgd.velocity().begin(), sgd.velocity().end()}, "velocity");
}

TEST(GpuModel, TrainingMatchesCpuModelMlp) {
  CONFLUX_REQUIRE_GPU();
  check_training_matches_cpu(mlp_specs(), mlp_input());
}

TEST(GpuModel, TrainingMatchesCpuModelCnn) {
  CONFLUX_REQUIRE_GPU();
  check_training_matches_cpu(cnn_specs(), cnn_input());
}

TEST(GpuModel, BackwardFromGivenLogitGradient) {
  CONFLUX_REQUIRE_GPU();
  model::Model cpu(cnn_specs(), cnn_input(), 10, 4);
  GpuModel gpu(cnn_specs(), cnn_input(), 10, 4);
  const auto stream = static_cast<cudaStream_t>(gpu.compute_stream());
  const Batch batch = make_batch(cnn_input(), 6, 10, 1);
  Rng rng{20, 1};
  const model::Tensor dlogits = tensor({6, 10}, random_floats(60, rng));
  const model::Tensor x = batch_tensor(cnn_input(), 6, batch.images);  // kept for backward
  cpu.forward(x);
  cpu.backward(dlogits);
  const DeviceBatch d = upload(batch, stream);
  DeviceBuffer<float> ddl(60);
  ddl.copy_from_host(dlogits.data, stream);
  gpu.forward(d.images.data(), 6);
  gpu.backward(ddl.data());
  std::vector<float> grads(gpu.num_params());
  gpu.download_grads(grads);
  expect_close(grads, {cpu.grads().begin(), cpu.grads().end()}, "grads");
}

TEST(GpuModel, EmptyBatchGivesZeroGradients) {
  CONFLUX_REQUIRE_GPU();
  GpuModel gpu(cnn_specs(), cnn_input(), 10, 4);
  gpu.forward(nullptr, 0);
  const model::LossResult r = gpu.loss_and_grad(nullptr, 1.0f);
  EXPECT_EQ(r.loss_sum, 0.0);
  EXPECT_EQ(r.correct, 0);
  gpu.backward();
  std::vector<float> grads(gpu.num_params(), 1.0f);
  gpu.download_grads(grads);
  expect_bits(grads, std::vector<float>(gpu.num_params(), 0.0f), "grads");
}

TEST(GpuModel, ResumeFromDownloadedStateIsBitIdentical) {
  CONFLUX_REQUIRE_GPU();
  const model::SgdOptions opt{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f};
  GpuModel a(cnn_specs(), cnn_input(), 10, 8, opt);
  const auto step = [](GpuModel& m, int i) {
    const Batch batch = make_batch(cnn_input(), 8, 10, 200 + i);
    const auto stream = static_cast<cudaStream_t>(m.compute_stream());
    const DeviceBatch d = upload(batch, stream);
    m.forward(d.images.data(), 8);
    m.loss_and_grad_async(d.labels.data(), 0.125f);
    m.backward();
    m.sgd_step();
    m.synchronize();  // d is freed at the end of this scope
  };
  for (int i = 0; i < 3; ++i) step(a, i);
  std::vector<float> params(a.num_params()), velocity(a.num_params());
  a.download_params(params);
  a.download_velocity(velocity);
  GpuModel b(cnn_specs(), cnn_input(), 10, 999, opt);  // other initial values, overwritten
  b.upload_params(params);
  b.upload_velocity(velocity, a.sgd_started());
  EXPECT_TRUE(b.sgd_started());
  for (int i = 3; i < 6; ++i) {
    step(a, i);
    step(b, i);
  }
  expect_bits(params_of(b), params_of(a), "params after resuming");
}

TEST(GpuModel, RejectsBadLabelsAndSizes) {
  CONFLUX_REQUIRE_GPU();
  GpuModel gpu(mlp_specs(), mlp_input(), 10, 4);
  const auto stream = static_cast<cudaStream_t>(gpu.compute_stream());
  Batch batch = make_batch(mlp_input(), 4, 10, 3);
  batch.labels[2] = 12;
  const DeviceBatch d = upload(batch, stream);
  gpu.forward(d.images.data(), 4);
  EXPECT_THROW(gpu.loss_and_grad(d.labels.data(), 0.25f), InputError);
  std::vector<float> wrong(gpu.num_params() + 1);
  EXPECT_THROW(gpu.download_params(wrong), RuntimeError);
  EXPECT_THROW(gpu.upload_velocity(wrong, true), RuntimeError);
  gpu.forward(d.images.data(), 4);
  EXPECT_THROW(gpu.backward(), RuntimeError);  // no loss for this forward
  gpu.synchronize();                           // before d is freed
  EXPECT_THROW(GpuModel(mlp_specs(), mlp_input(), 10, 1, {.lr = 0.1f, .momentum = -1.0f}),
               InputError);
  EXPECT_THROW(GpuModel({{.type = "linear", .out = 3}}, mlp_input(), 3, 1), InputError);
}

#endif  // CONFLUX_HAVE_CUDA

}  // namespace
}  // namespace conflux::gpu
