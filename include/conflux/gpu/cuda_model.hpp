#pragma once
/// @file cuda_model.hpp
/// The device model (device_model.hpp) and its optimiser on the current CUDA device, behind an
/// interface free of CUDA types, for the GPU trainer and the GPU tests. Defined in CUDA builds
/// only (src/gpu/cuda_model.cu): a CPU-only build has no caller.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "conflux/config/sections.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/precision.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"

/// The CUDA runtime's stream type (cudaStream_t is CUstream_st*).
struct CUstream_st;

namespace conflux::gpu {

/// How the device model computes.
struct CudaModelOptions {
  /// fp32 (TF32 off), tf32, or bf16 activations as torch.autocast (gpu/precision.hpp).
  Precision precision = Precision::kFp32;
  /// Only algorithms cuDNN declares deterministic (the same bits on every run on one GPU
  /// type); without, cuDNN may pick faster ones that add with atomics.
  bool deterministic = true;
  /// The most device memory one convolution call may use as scratch.
  std::size_t workspace_limit_bytes = std::size_t{256} << 20;
  /// Replays steady training steps as captured CUDA graphs (gpu/step_graphs.hpp).
  bool graphs = false;
};

/// Called during backward with a layer's index once its parameter gradients are enqueued.
using LayerDone = std::function<void(std::size_t layer)>;

/// One training step of CudaModel::compute().
struct TrainStep {
  StepBatch batch;                        ///< in device memory
  float grad_scale = 1.0f;                ///< dL/dlogits scale
  std::uint64_t seed = 0;                 ///< run.seed: dropout masks
  std::uint64_t step = 0;                 ///< global step: dropout masks
  model::StatReducer* reducer = nullptr;  ///< batch norm over trainers (through the host)
  DeviceStatSum* device_sum = nullptr;    ///< batch norm over trainers (NCCL), over reducer
  LayerDone layer_done;                   ///< announces each layer's gradients during backward
};

/// How the training steps ran (CudaModelOptions::graphs).
struct GraphStats {
  std::size_t captures = 0;  ///< graphs captured (recaptures included)
  std::size_t replays = 0;   ///< steps run as one graph launch
  std::string failure;       ///< why capturing failed (graphs then off); empty when it has not
};

class CudaModel {
 public:
  /// `initial`'s kernels, state (its current parameters and buffers) and the optimiser [train]
  /// configures, on the calling thread's current device, with a compute stream of its own.
  /// InputError naming a layer without device kernels; RuntimeError on CUDA errors.
  CudaModel(const model::Model& initial, const TrainSection& train,
            const CudaModelOptions& options = {});
  CudaModel(CudaModel&&) noexcept;
  CudaModel& operator=(CudaModel&&) noexcept;
  ~CudaModel();

  /// The stream every call enqueues on.
  CUstream_st* stream() const noexcept;
  /// The device the model lives on.
  int device() const noexcept;
  std::size_t num_params() const noexcept;
  std::size_t state_size() const noexcept;
  /// The gradients on the device (num_params floats), for a gradient exchange on stream().
  float* grads() noexcept;

  /// Forward pass of the step's batch, the loss with train.label_smoothing and dL/dlogits
  /// scaled by its grad_scale, and the backward pass (announcing each layer to its layer_done,
  /// when set); enqueued. With CudaModelOptions::graphs, a step of one trainer without
  /// layer_done (host code) is replayed as a CUDA graph once its shape is steady.
  void compute(const TrainStep& step);
  /// How compute() ran its steps.
  GraphStats graph_stats() const;
  /// Whether compute() reads TrainStep::batch.samples (a dropout layer's masks).
  bool reads_samples() const noexcept;
  /// The per-channel factors 8-bit images are normalised by (SampleTransform::pixel_scale and
  /// pixel_shift); InputError unless one per input channel.
  void set_pixel_normalisation(std::span<const float> scale, std::span<const float> shift);
  /// The summed loss, correct and skipped samples of every compute() since the last call
  /// (waits for them; compute() itself never does); InputError for a label out of range.
  model::LossResult take_losses();
  /// The last compute()'s or evaluate()'s loss (waits for it).
  model::LossResult loss_result();
  /// Sum of squares of the gradients (waits).
  double grad_sum_of_squares();
  /// Clips the gradients to train.clip_grad_norm when set, then one optimiser step with `lr`;
  /// enqueued.
  void apply(double lr);
  /// The learning rate of the last apply() (train.lr before the first).
  double lr() const noexcept;
  /// With train.clip_grad_norm: the gradient norm the last apply() clipped, before clipping
  /// (waits); NaN before the first apply() and without clipping.
  double clipped_grad_norm();
  /// Evaluation forward pass and loss of `n` samples in device memory (no gradients); waits.
  model::LossResult evaluate(const float* images, const model::Label* labels, int n);
  /// evaluate() of 8-bit images, normalised on the device as compute()'s.
  model::LossResult evaluate(const std::uint8_t* pixels, const model::Label* labels, int n);

  /// The model's state (model::Model::state() layout) (waits).
  void download_state(std::span<float> state);
  /// The model's state and the optimiser's (waits).
  void download(std::span<float> state, model::OptimizerState& optimizer);
  /// Replaces both (resume); InputError for another optimiser's state.
  void restore(std::span<const float> state, const model::OptimizerState& optimizer);
  /// Waits for everything enqueued.
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::gpu
