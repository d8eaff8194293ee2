#pragma once
/// @file gpu_model.hpp
/// model::Model on one CUDA device: same layers, same flat parameter layout (param_infos), same
/// initial parameters, same SGD. Free of CUDA types (pimpl), so g++ code includes it in both
/// builds; in a CPU-only build (make CUDA=0) the constructor throws RuntimeError "built without
/// CUDA". See docs/gpu.md.
///
/// One training step, everything enqueued on compute_stream() in this order:
///
///     const float* logits = model.forward(device_images, n);  // [n, classes]
///     model.loss_and_grad_async(device_labels, 1.0f / global_batch);
///     model.backward();                        // overwrites grads()
///     /* allreduce grads() here, e.g. ncclAllReduce(grads().data, ..., compute_stream()) */
///     model.sgd_step(lr);
///     model::LossResult r = model.loss_result();  // waits for the loss only
///
/// Inputs are device pointers. Copy pinned host batches on a separate stream and make the
/// compute stream wait for that copy (cudaStreamWaitEvent(compute_stream(), copied, 0)); the
/// images and labels must stay unchanged until backward() and loss_and_grad_async() have run
/// on the device (record an event on compute_stream() after backward() before reusing them).
///
/// Methods make the model's device current on the calling thread. Not thread-safe.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/sgd.hpp"

/// The CUDA runtime's stream type (cudaStream_t is CUstream_st*), declared here so that this
/// header needs no CUDA headers.
struct CUstream_st;

namespace conflux::gpu {

/// The layer types the GPU model has kernels for (model_engine.hpp builds exactly these).
inline constexpr std::array<std::string_view, 5> kGpuLayerTypes = {"linear", "conv2d", "maxpool",
                                                                   "relu", "flatten"};

/// True when the GPU model has kernels for layers of `type`.
inline bool has_gpu_kernel(std::string_view type) {
  return std::find(kGpuLayerTypes.begin(), kGpuLayerTypes.end(), type) != kGpuLayerTypes.end();
}

/// True when the GPU kernel of the layer's type covers its options: the GPU max pool has no
/// padding (the CPU's does).
inline bool gpu_kernel_covers(const LayerSpec& spec) {
  return spec.type != "maxpool" || spec.padding == 0;
}

/// True when layer `i` takes the previous layer's output (the model's input for the first),
/// the only wiring the GPU model runs.
inline bool takes_previous_output(const std::vector<LayerSpec>& specs, std::size_t i) {
  if (specs[i].inputs.empty()) return true;
  const std::string previous = i == 0 ? kModelInputName : specs[i - 1].name;
  return specs[i].inputs.size() == 1 && !previous.empty() && specs[i].inputs[0] == previous;
}

/// Index of the first layer of `specs` the GPU cannot run (no kernel for its type or its
/// options, or graph wiring), or -1 when the GPU runs them all.
inline int first_layer_without_gpu_kernel(const std::vector<LayerSpec>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!has_gpu_kernel(specs[i].type) || !gpu_kernel_covers(specs[i]) ||
        !takes_previous_output(specs, i)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

/// A range of device memory: pointer and element count (never dereference on the host).
template <class T>
struct DeviceSpan {
  T* data = nullptr;
  std::size_t size = 0;
};

/// A sequential model with parameters, gradients and momentum in device memory.
class GpuModel {
 public:
  /// Builds model::Model(specs, input_shape, num_classes, seed) on the host (validation,
  /// parameter layout and initial values; InputError as there) and uploads its parameters to
  /// the calling thread's current device. `sgd` gives the momentum and weight decay (validated
  /// as by model::Sgd) and the learning rate of sgd_step(). RuntimeError on CUDA errors (no GPU,
  /// out of memory) and in a CPU-only build.
  GpuModel(const std::vector<LayerSpec>& specs, const model::SampleShape& input_shape,
           int num_classes, std::uint64_t seed, const model::SgdOptions& sgd = {});
  /// Uploads `initial`'s layout and current parameters (loaded weights, e.g. train.init_from,
  /// included), so that the GPU starts where the host model is; otherwise as above.
  GpuModel(const model::Model& initial, const model::SgdOptions& sgd);
  GpuModel(GpuModel&&) noexcept;
  GpuModel& operator=(GpuModel&&) noexcept;
  ~GpuModel();

  /// The device this model lives on.
  int device() const noexcept;
  /// The stream all of this model's work runs on (a cudaStream_t), for NCCL calls and events.
  CUstream_st* compute_stream() const noexcept;

  /// Pre-allocates activations and scratch for batches of up to `max_batch` samples; forward()
  /// grows them on demand (synchronising first), so calling this is optional.
  void reserve(int max_batch);

  /// Enqueues the forward pass of `n` samples at device_images ([n, input_shape...], floats)
  /// and returns the device logits [n, num_classes], valid until the next forward().
  const float* forward(const float* device_images, int n);

  /// Enqueues the softmax cross-entropy of the last forward's logits against device_labels
  /// (n bytes): dL/dlogits = grad_scale * (softmax - onehot) for backward(), and the per-sample
  /// losses for loss_result().
  void loss_and_grad_async(const model::Label* device_labels, float grad_scale);
  /// Waits for the last loss_and_grad_async() and returns the summed loss (double, in sample
  /// order as on the CPU) and the correct predictions. InputError for a label >= num_classes.
  model::LossResult loss_result();
  /// loss_and_grad_async() then loss_result().
  model::LossResult loss_and_grad(const model::Label* device_labels, float grad_scale);

  /// Enqueues the backward pass from the loss's dL/dlogits; overwrites grads().
  void backward();
  /// Enqueues the backward pass from a given dL/dlogits (device, [n, num_classes]).
  void backward(const float* device_grad_logits);

  /// All parameters, flat, in device memory; same layout as model::Model::params().
  DeviceSpan<float> params() noexcept;
  DeviceSpan<const float> params() const noexcept;
  /// All gradients, flat, same layout (what an allreduce sums).
  DeviceSpan<float> grads() noexcept;
  DeviceSpan<const float> grads() const noexcept;
  /// Names, shapes and offsets of the parameter tensors (model::Model::param_infos()).
  const std::vector<model::ParamInfo>& param_infos() const noexcept;
  std::size_t num_params() const noexcept;
  const model::SampleShape& input_shape() const noexcept;
  int num_classes() const noexcept;
  /// model::Model::summary().
  const std::vector<std::string>& summary() const noexcept;

  /// SGD options in force (lr = the rate of sgd_step()).
  const model::SgdOptions& sgd_options() const noexcept;
  /// Changes the learning rate (for schedules).
  void set_lr(float lr) noexcept;
  /// Enqueues one model::Sgd step on params() from grads() with the momentum buffer on device.
  void sgd_step();
  /// set_lr(lr), then sgd_step().
  void sgd_step(float lr);
  /// Whether an SGD step has run (model::Sgd::started()).
  bool sgd_started() const noexcept;

  /// Copies the parameters to the host (waits for all enqueued work).
  void download_params(std::span<float> out) const;
  /// Replaces the parameters (after all enqueued work; returns when copied).
  void upload_params(std::span<const float> in);
  /// Copies the gradients to the host (waits for all enqueued work).
  void download_grads(std::span<float> out) const;
  /// Replaces the gradients, e.g. after a host-side allreduce.
  void upload_grads(std::span<const float> in);
  /// Copies the momentum buffer to the host (model::Sgd::velocity(), for checkpoints).
  void download_velocity(std::span<float> out) const;
  /// Restores the SGD state saved from download_velocity() and sgd_started()
  /// (model::Sgd::restore): a resumed run continues bit-identically.
  void upload_velocity(std::span<const float> in, bool started);

  /// Blocks until all work enqueued on compute_stream() has finished.
  void synchronize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::gpu
