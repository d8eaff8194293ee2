// The GPU code path on the host: layer_math.hpp's element functions and GEMM descriptors and
// ModelEngine, run by HostExecutor against the CPU layers and model::Model. Needs no GPU, so it
// runs in both builds and checks every index computation, GEMM argument and buffer of the GPU
// path on machines without one. Tolerances: exact where the GPU code does the CPU's arithmetic
// in the CPU's order (im2col/col2im, max-pool, ReLU, linear bias gradient, loss, SGD); GEMM
// results within relative 1e-4 + absolute 1e-5 (times the tensor's largest magnitude).

#include <gtest/gtest.h>

#include <vector>

#include "conflux/gpu/host_executor.hpp"
#include "conflux/gpu/layer_math.hpp"
#include "conflux/gpu/model_engine.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/sgd.hpp"
#include "gpu_test_support.hpp"

namespace conflux::gpu {
namespace {

using namespace conflux::gpu::testing;  // NOLINT(google-build-using-namespace)

// Runs layer_math on host vectors with HostExecutor.
struct HostBackend {
  HostExecutor ex;

  LayerResult linear(const std::vector<float>& x, math::LinearShape s,
                     const std::vector<float>& params, const std::vector<float>& dy,
                     bool input_grad) {
    const std::size_t w = static_cast<std::size_t>(s.out) * s.in;
    LayerResult r;
    r.y.assign(static_cast<std::size_t>(s.n) * s.out, -1.0f);
    r.dparams.assign(params.size(), -1.0f);
    if (input_grad) r.dx.assign(x.size(), -1.0f);
    math::linear_forward(ex, x.data(), s, params.data(), params.data() + w, r.y.data());
    math::linear_backward(ex, x.data(), dy.data(), s, params.data(), r.dparams.data(),
                          r.dparams.data() + w, input_grad ? r.dx.data() : nullptr);
    return r;
  }

  LayerResult conv2d(const std::vector<float>& x, const math::ConvShape& s,
                     const std::vector<float>& params, const std::vector<float>& dy,
                     bool input_grad) {
    const std::size_t w = static_cast<std::size_t>(s.out_channels) * s.rows();
    std::vector<float> col(s.col_floats(), -1.0f), tmp(s.out_floats(), -1.0f),
        dcol(s.col_floats(), -1.0f), ones(s.pixels() * s.n, 1.0f);
    LayerResult r;
    r.y.assign(s.out_floats(), -1.0f);
    r.dparams.assign(params.size(), -1.0f);
    if (input_grad) r.dx.assign(x.size(), -1.0f);
    math::conv2d_forward(ex, x.data(), s, params.data(), params.data() + w, col.data(), tmp.data(),
                         r.y.data());
    math::conv2d_backward(ex, dy.data(), s, params.data(), col.data(), ones.data(), tmp.data(),
                          input_grad ? dcol.data() : nullptr, r.dparams.data(),
                          r.dparams.data() + w, input_grad ? r.dx.data() : nullptr);
    return r;
  }

  LayerResult maxpool(const std::vector<float>& x, const math::PoolShape& s,
                      const std::vector<float>& dy) {
    LayerResult r;
    r.y.assign(dy.size(), -1.0f);
    r.argmax.assign(dy.size(), -1);
    r.dx.assign(x.size(), -1.0f);
    math::maxpool_forward(ex, x.data(), s, r.y.data(), r.argmax.data());
    math::maxpool_backward(ex, dy.data(), r.argmax.data(), s, r.dx.data());
    return r;
  }

  LayerResult relu(const std::vector<float>& x, const std::vector<float>& dy) {
    LayerResult r;
    r.y.assign(x.size(), -1.0f);
    r.dx.assign(x.size(), -1.0f);
    math::relu_forward(ex, x.data(), x.size(), r.y.data());
    math::relu_backward(ex, x.data(), dy.data(), x.size(), r.dx.data());
    return r;
  }

  std::vector<float> im2col(const std::vector<float>& x, int n, const model::ConvGeometry& g) {
    std::vector<float> col(g.col_rows() * g.col_cols() * n, -1.0f);
    ex.for_each(col.size(), math::Im2col{x.data(), col.data(), n, g});
    return col;
  }

  std::vector<float> col2im(const std::vector<float>& col, int n, const model::ConvGeometry& g) {
    std::vector<float> x(g.image_size() * n, -1.0f);
    ex.for_each(x.size(), math::Col2im{col.data(), x.data(), n, g});
    return x;
  }

  SoftmaxResult softmax(const std::vector<float>& logits, const std::vector<model::Label>& labels,
                        int n, int k, float scale) {
    SoftmaxResult r;
    r.loss.assign(n, -1.0);
    r.status.assign(n, -7);
    r.grad.assign(logits.size(), -1.0f);
    math::softmax_cross_entropy(ex, logits.data(), labels.data(), n, k, scale, r.loss.data(),
                                r.status.data(), r.grad.data());
    return r;
  }

  void sgd(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& v, float lr,
           float momentum, float weight_decay, bool first_step) {
    math::sgd_step(ex, w.data(), g.data(), v.data(), w.size(), lr, momentum, weight_decay,
                   first_step);
  }
};

TEST(GpuMath, LinearMatchesCpu) {
  HostBackend b;
  check_linear(b, 5, 7, 3, true);
  check_linear(b, 5, 7, 3, false);
  check_linear(b, 1, 33, 10, true);
  check_linear(b, 0, 4, 2, true);  // empty batch: zero parameter gradients
}

TEST(GpuMath, Conv2dMatchesCpu) {
  HostBackend b;
  check_conv2d(b, 3, geometry(2, 7, 6, 3, 1, 1), 4, true);
  check_conv2d(b, 2, geometry(3, 9, 9, 3, 2, 1), 5, true);
  check_conv2d(b, 2, geometry(1, 8, 5, 5, 1, 0), 2, false);
  check_conv2d(b, 2, geometry(2, 5, 5, 1, 1, 0), 3, true);
  check_conv2d(b, 2, geometry(2, 6, 7, 2, 3, 2), 3, true);
  check_conv2d(b, 0, geometry(2, 5, 5, 3, 1, 1), 3, true);
}

TEST(GpuMath, Im2colAndCol2imMatchCpuExactly) {
  HostBackend b;
  check_im2col(b, 3, geometry(2, 7, 6, 3, 1, 1));
  check_im2col(b, 2, geometry(3, 9, 9, 3, 2, 1));
  check_im2col(b, 2, geometry(1, 8, 5, 5, 1, 0));
  check_im2col(b, 2, geometry(2, 6, 7, 2, 3, 2));
  check_im2col(b, 1, geometry(2, 4, 4, 3, 1, 2));  // padding wider than half the kernel
}

TEST(GpuMath, MaxPoolMatchesCpuExactly) {
  HostBackend b;
  check_maxpool(b, 2, 3, 8, 8, 2, 0, false);
  check_maxpool(b, 2, 3, 9, 7, 2, 2, false);  // partial last windows dropped
  check_maxpool(b, 2, 2, 7, 7, 3, 1, false);  // overlapping windows share maxima
  check_maxpool(b, 2, 2, 9, 8, 3, 2, true);   // ties: first maximum
  check_maxpool(b, 1, 2, 6, 6, 2, 1, true);
}

TEST(GpuMath, ReluMatchesCpuExactly) {
  HostBackend b;
  check_relu(b, 1000);
}

TEST(GpuMath, SoftmaxCrossEntropyMatchesCpuExactly) {
  HostBackend b;
  check_softmax(b, 9, 10, 1.0f / 9, 0.0, 0.0);
  check_softmax(b, 4, 3, 0.25f, 0.0, 0.0);
}

// The GPU path's loss leaves a skipped sample out exactly as the CPU loss does: status 2, no
// loss, a zero gradient row; the sum over samples matches the CPU's.
TEST(GpuMath, SkippedSampleMatchesCpu) {
  HostBackend b;
  const std::vector<float> logits{1, 2, 3, 5, -1, 0, 0, 0, 0};
  const std::vector<model::Label> labels{2, model::kSkippedLabel, 0};
  const auto r = b.softmax(logits, labels, 3, 3, 0.5f);
  EXPECT_EQ(r.status[1], 2);
  EXPECT_EQ(r.loss[1], 0.0);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(r.grad[3 + j], 0.0f);
  model::Tensor t;
  t.resize({3, 3});
  t.data = logits;
  model::Tensor grad;
  const model::LossResult cpu = model::softmax_cross_entropy(t, labels, 0.5f, &grad);
  const model::LossResult gpu = sum_losses(r.loss.data(), r.status.data(), 3, 3);
  EXPECT_EQ(gpu.loss_sum, cpu.loss_sum);
  EXPECT_EQ(gpu.correct, cpu.correct);
  EXPECT_EQ(gpu.skipped, 1);
  EXPECT_EQ(r.grad, grad.data);
}

TEST(GpuMath, SgdMatchesCpuBitForBit) {
  HostBackend b;
  check_sgd(b, 0.0f, 0.0f);
  check_sgd(b, 0.0f, 5e-4f);
  check_sgd(b, 0.9f, 0.0f);
  check_sgd(b, 0.9f, 5e-4f);
}

// ---- ModelEngine on the host vs model::Model -----------------------------------------------

std::vector<float> host_copy(const float* p, std::size_t n) {
  return {p, p + n};
}

void check_engine_matches_cpu(const std::vector<LayerSpec>& specs,
                              const model::SampleShape& input) {
  const int classes = 10;
  const std::uint64_t seed = 5;
  const model::SgdOptions opt{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f};
  model::Model cpu(specs, input, classes, seed);
  model::Sgd sgd(opt, cpu.params().size());
  ModelEngine<HostExecutor> gpu(HostExecutor{}, specs, model::Model(specs, input, classes, seed));
  ASSERT_EQ(gpu.num_params(), cpu.params().size());
  expect_bits(host_copy(gpu.params(), gpu.num_params()), {cpu.params().begin(), cpu.params().end()},
              "initial params");

  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    const int n = step == 2 ? 3 : 8;  // a smaller batch reuses the buffers
    const Batch batch = make_batch(input, n, classes, step);
    const model::Tensor x = batch_tensor(input, n, batch.images);
    const model::Tensor& logits = cpu.forward(x);
    model::Tensor grad;
    const model::LossResult want =
        model::softmax_cross_entropy(logits, batch.labels, 1.0f / n, &grad);
    cpu.backward(grad);

    const float* got_logits = gpu.forward(batch.images.data(), n);
    expect_close(host_copy(got_logits, logits.size()), logits.data, "logits");
    gpu.loss(batch.labels.data(), 1.0f / n);
    const model::LossResult got = sum_losses(gpu.sample_loss(), gpu.sample_status(), n, classes);
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * std::max(1.0, want.loss_sum));
    EXPECT_EQ(got.correct, want.correct);
    gpu.backward(nullptr);
    expect_close(host_copy(gpu.grads(), gpu.num_params()), {cpu.grads().begin(), cpu.grads().end()},
                 "grads");

    sgd.step(cpu.params(), cpu.grads());
    gpu.sgd_step(opt.lr, opt.momentum, opt.weight_decay);
    expect_close(host_copy(gpu.params(), gpu.num_params()),
                 {cpu.params().begin(), cpu.params().end()}, "params");
  }
  EXPECT_TRUE(gpu.sgd_started());
}

TEST(GpuMath, ModelEngineMatchesCpuModelMlp) {
  check_engine_matches_cpu(mlp_specs(), mlp_input());
}

TEST(GpuMath, ModelEngineMatchesCpuModelCnn) {
  check_engine_matches_cpu(cnn_specs(), cnn_input());
}

TEST(GpuMath, ModelEngineEmptyBatchGivesZeroGradients) {
  const std::vector<LayerSpec> specs = cnn_specs();
  ModelEngine<HostExecutor> gpu(HostExecutor{}, specs, model::Model(specs, cnn_input(), 10, 1));
  const Batch batch = make_batch(cnn_input(), 4, 10, 1);
  gpu.forward(batch.images.data(), 4);
  gpu.loss(batch.labels.data(), 0.25f);
  gpu.backward(nullptr);
  gpu.forward(nullptr, 0);
  gpu.loss(nullptr, 1.0f);
  gpu.backward(nullptr);
  EXPECT_EQ(sum_losses(gpu.sample_loss(), gpu.sample_status(), 0, 10).loss_sum, 0.0);
  expect_bits(host_copy(gpu.grads(), gpu.num_params()), std::vector<float>(gpu.num_params(), 0.0f),
              "grads of an empty batch");
}

TEST(GpuMath, ModelEngineFlattenIsExact) {
  // Parameter-free model: the logits are relu(flatten(x)), bit for bit.
  const std::vector<LayerSpec> specs{{.type = "flatten"}, {.type = "relu"}};
  const model::SampleShape input{2, 1, 3};
  ModelEngine<HostExecutor> gpu(HostExecutor{}, specs, model::Model(specs, input, 6, 1));
  const Batch batch = make_batch(input, 3, 6, 2);
  const float* logits = gpu.forward(batch.images.data(), 3);
  std::vector<float> want = batch.images;
  for (float& v : want) v = v > 0.0f ? v : 0.0f;
  expect_bits(host_copy(logits, want.size()), want, "logits");
}

TEST(GpuMath, ModelEngineResumesBitIdentically) {
  // Continuing a run and restoring (params, velocity, started) into a fresh engine give the same
  // bits: what GpuModel's download/upload of params and velocity rely on.
  const std::vector<LayerSpec> specs = mlp_specs();
  const model::Model reference(specs, mlp_input(), 10, 3);
  ModelEngine<HostExecutor> a(HostExecutor{}, specs, reference);
  const auto step = [](ModelEngine<HostExecutor>& m, int i) {
    const Batch batch = make_batch(mlp_input(), 4, 10, 100 + i);
    m.forward(batch.images.data(), 4);
    m.loss(batch.labels.data(), 0.25f);
    m.backward(nullptr);
    m.sgd_step(0.1f, 0.9f, 1e-4f);
  };
  for (int i = 0; i < 3; ++i) step(a, i);
  ModelEngine<HostExecutor> b(HostExecutor{}, specs, reference);
  std::copy_n(a.params(), a.num_params(), b.params());
  std::copy_n(a.velocity(), a.num_params(), b.velocity());
  b.set_sgd_started(a.sgd_started());
  for (int i = 3; i < 5; ++i) {
    step(a, i);
    step(b, i);
  }
  expect_bits(host_copy(b.params(), b.num_params()), host_copy(a.params(), a.num_params()),
              "params");
}

}  // namespace
}  // namespace conflux::gpu
