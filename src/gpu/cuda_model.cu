// gpu::CudaModel (cuda_model.hpp): DeviceModel and DeviceOptimizer on the CUDA executor.

#include <limits>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cuda_model.hpp"
#include "conflux/gpu/device_model.hpp"
#include "conflux/gpu/device_optimizer.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/gpu/step_graphs.hpp"
#include "cuda_executor.cuh"

namespace conflux::gpu {

struct CudaModel::Impl {
  Impl(const model::Model& initial, const TrainSection& train, const CudaModelOptions& o)
      : device(current_device()),
        // fp32 calls (all of them but bf16 activations') in fp32 or TF32.
        executor(stream.get(),
                 ConvOptions{.precision = o.precision == Precision::kTf32 ? Precision::kTf32
                                                                          : Precision::kFp32,
                             .deterministic = o.deterministic,
                             .workspace_limit_bytes = o.workspace_limit_bytes}),
        model(executor, initial, o.precision == Precision::kBf16 ? DType::kBf16 : DType::kF32),
        optimizer(executor, train, model.num_params()),
        label_smoothing(train.label_smoothing),
        clip_norm(static_cast<float>(train.clip_grad_norm)),
        graphs_on(o.graphs),
        graphs(executor) {}

  int device;
  Stream stream;
  CudaExecutor executor;
  DeviceModel<CudaExecutor> model;
  DeviceOptimizer<CudaExecutor> optimizer;
  double label_smoothing;
  float clip_norm;
  bool clipped = false;  // an apply() has clipped
  bool graphs_on;
  StepGraphs<CudaExecutor> graphs;
};

CudaModel::CudaModel(const model::Model& initial, const TrainSection& train,
                     const CudaModelOptions& options)
    : impl_(std::make_unique<Impl>(initial, train, options)) {}
CudaModel::CudaModel(CudaModel&&) noexcept = default;
CudaModel& CudaModel::operator=(CudaModel&&) noexcept = default;
CudaModel::~CudaModel() {
  if (impl_ == nullptr) return;
  try {
    impl_->executor.synchronize();  // nothing enqueued may outlive the buffers
  } catch (...) {  // a destructor must not throw; the error was reported where it happened
  }
}

CUstream_st* CudaModel::stream() const noexcept {
  return impl_->stream.get();
}
int CudaModel::device() const noexcept {
  return impl_->device;
}
std::size_t CudaModel::num_params() const noexcept {
  return impl_->model.num_params();
}
std::size_t CudaModel::state_size() const noexcept {
  return impl_->model.state_size();
}
float* CudaModel::grads() noexcept {
  return impl_->model.grads();
}

void CudaModel::compute(const TrainStep& step) {
  Impl& m = *impl_;
  m.model.set_step(step.step);  // outside the graph: replays read the current step
  const StepOptions options{.grad_scale = step.grad_scale,
                            .label_smoothing = m.label_smoothing,
                            .seed = step.seed,
                            .reducer = step.reducer,
                            .device_sum = step.device_sum};
  // Announcing layers runs host code, and the reducer waits for the host: neither replays.
  // Nor, until it has run on several GPUs, the NCCL statistics sum (NCCL calls captured in a
  // graph and made eagerly on one communicator).
  if (!m.graphs_on || step.layer_done || step.reducer != nullptr || step.device_sum != nullptr) {
    m.model.train_step(step.batch, options, step.layer_done);
    return;
  }
  const StepBatch& b = step.batch;
  const StepKey key{.input = b.pixels != nullptr ? static_cast<const void*>(b.pixels) : b.images,
                    .labels = b.labels,
                    .samples = b.samples,
                    .n = b.n,
                    .grad_scale = step.grad_scale,
                    .seed = step.seed};
  m.graphs.run(key, [&] { m.model.train_step(b, options); });
}

bool CudaModel::reads_samples() const noexcept {
  return impl_->model.reads_samples();
}

GraphStats CudaModel::graph_stats() const {
  return {.captures = impl_->graphs.captures(),
          .replays = impl_->graphs.replays(),
          .failure = impl_->graphs.failure()};
}

void CudaModel::set_pixel_normalisation(std::span<const float> scale,
                                        std::span<const float> shift) {
  impl_->model.set_pixel_normalisation(scale, shift);
}

model::LossResult CudaModel::take_losses() {
  return impl_->model.take_losses();
}

model::LossResult CudaModel::loss_result() {
  return impl_->model.loss_result();
}

double CudaModel::grad_sum_of_squares() {
  return impl_->model.grad_sum_of_squares();
}

void CudaModel::apply(double lr) {
  // The merged gradient is the same on every replica, so every replica clips alike.
  if (impl_->clip_norm > 0.0f) {
    impl_->model.clip_grads(impl_->clip_norm);
    impl_->clipped = true;
  }
  impl_->optimizer.set_lr(lr);
  impl_->optimizer.step(impl_->model.params(), impl_->model.grads());
}

double CudaModel::lr() const noexcept {
  return impl_->optimizer.lr();
}

double CudaModel::clipped_grad_norm() {
  return impl_->clipped ? impl_->model.clipped_norm() : std::numeric_limits<double>::quiet_NaN();
}

model::LossResult CudaModel::evaluate(const float* images, const model::Label* labels, int n) {
  impl_->model.forward(images, n, model::Pass{});
  impl_->model.loss(labels, 0.0f, 0.0, false);
  return impl_->model.loss_result();
}

model::LossResult CudaModel::evaluate(const std::uint8_t* pixels, const model::Label* labels,
                                      int n) {
  impl_->model.forward(pixels, n, model::Pass{});
  impl_->model.loss(labels, 0.0f, 0.0, false);
  return impl_->model.loss_result();
}

void CudaModel::download_state(std::span<float> state) {
  impl_->model.download_state(state);
}

void CudaModel::download(std::span<float> state, model::OptimizerState& optimizer) {
  impl_->model.download_state(state);
  impl_->optimizer.save(optimizer);
}

void CudaModel::restore(std::span<const float> state, const model::OptimizerState& optimizer) {
  impl_->optimizer.restore(optimizer);  // checks the state first
  impl_->model.upload_state(state);
}

void CudaModel::synchronize() {
  impl_->executor.synchronize();
}

}  // namespace conflux::gpu
