#pragma once
/// @file compute_backend.hpp
/// Where a trainer's model lives and computes, behind one interface, so that the training loop
/// is the same for both: the CPU (model::Model + model::Optimizer + comm::GradientSync on host
/// buffers, exactly the calls the loop made before) and one CUDA device (gpu::CudaModel: the same
/// model's device kernels, batches staged through pinned buffers on a copy stream, NCCL or
/// host-staged gradient exchanges). Free of CUDA types. See docs/gpu.md.
///
/// One training step, in this order:
///
///     backend.stage(batch);           // unless staged during the previous step
///     backend.compute(grad_scale, global_step);  // forward, loss, backward (GPU: enqueues)
///     if (backend.stages_ahead()) backend.stage(next_batch);  // overlaps the device's work
///     comm::Merged m = backend.exchange();
///     if (m != comm::Merged::kNone) backend.apply(lr);
///
/// and every train.log_every steps (and at checkpoints) backend.take_losses(): the GPU's only
/// wait for a number of the step (docs/gpu.md, "Input path and host waits").

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "conflux/config/config.hpp"
#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"
#include "conflux/model/tensor.hpp"
#include "conflux/train/device_choice.hpp"

namespace conflux::train {

/// A trainer's model, optimiser and gradient exchange on one processor.
class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;

  /// "CPU", or the GPU's description, for logs.
  virtual std::string device_name() const = 0;
  /// The gradient exchange for logs, e.g. "mpi-allreduce", "nccl-allreduce".
  virtual std::string sync_name() const = 0;
  /// How the steps computed, for the end-of-run log (the GPU: its CUDA graphs); empty when
  /// there is nothing to say.
  virtual std::string compute_summary() const { return {}; }
  /// Names, shapes and offsets of the model's state tensors: parameters, then buffers such as
  /// running statistics (model::Model::state_infos()); what checkpoints hold.
  virtual const std::vector<model::ParamInfo>& state_infos() const noexcept = 0;
  /// Floats of the model's state (parameters and buffers).
  virtual std::size_t state_size() const noexcept = 0;

  /// Collective over the trainers, once before the first step: what the exchange needs set up
  /// (the GPU's NCCL communicator). Deferred until all trainers have been built, so that a
  /// trainer failing at start-up leaves no one waiting.
  virtual void connect() {}

  /// True when stage() only starts an asynchronous copy, so that staging the next batch right
  /// after compute() overlaps that step's computation (the GPU); false on the CPU.
  virtual bool stages_ahead() const noexcept { return false; }
  /// Where this backend wants batches as 8-bit images (Batch::pixels) built and received, when
  /// the transform makes them: it normalises them itself (the GPU: pinned memory, uploaded as
  /// bytes, normalised on the device). Null: batches of floats (the CPU).
  virtual std::pmr::memory_resource* pixel_memory() noexcept { return nullptr; }
  /// Hands over the batch of the next compute(). The CPU keeps a reference (the batch must stay
  /// unchanged until compute()); the GPU takes the batch's pixel buffer (giving it a free one
  /// back) or copies its floats into pinned memory, and starts the upload, so the batch may
  /// change once stage() returns.
  virtual void stage(data::Batch& batch) = 0;
  /// Forward pass, softmax cross-entropy (with train.label_smoothing) with dL/dlogits scaled by
  /// `grad_scale`, and backward pass of the staged batch, in training mode (dropout masks
  /// drawn for `global_step`); overwrites the gradients. The GPU enqueues and returns.
  virtual void compute(float grad_scale, std::uint64_t global_step) = 0;
  /// Summed loss, correct and skipped samples of every compute() since the last call. The
  /// GPU keeps them on the device and waits for them only here, so a step never waits for its
  /// own loss.
  virtual model::LossResult take_losses() = 0;

  /// One step's gradient exchange among the trainers (comm::GradientSync::exchange).
  virtual comm::Merged exchange() = 0;
  /// comm::GradientSync::drain: true when the gradients now hold a merged gradient still owed.
  virtual bool drain() = 0;
  /// comm::GradientSync::progress.
  virtual void progress() = 0;
  /// Sum of squares of the gradient buffer as it is now (model::sum_of_squares): before
  /// exchange() this trainer's contribution, after it the merged gradient. For the gradient
  /// noise scale (train.noise_scale).
  virtual double gradient_sum_of_squares() = 0;
  /// One optimiser step from the (merged) gradients with learning rate `lr`, after clipping
  /// them to train.clip_grad_norm when set.
  virtual void apply(double lr) = 0;
  /// The learning rate of the last apply() (train.lr before the first).
  virtual double lr() const = 0;
  /// With train.clip_grad_norm: the L2 norm of the gradient the last apply() clipped, before
  /// clipping (the GPU waits for it); NaN before the first apply() and without clipping.
  virtual double clipped_grad_norm() = 0;

  /// Loss (plain cross-entropy) and correct predictions of an evaluation batch (floats, or
  /// 8-bit images for a backend with pixel_memory()); no gradients.
  virtual model::LossResult evaluate(const data::Batch& batch) = 0;

  /// Copies the model's state (state_infos() layout) and the optimiser's state to the host (a
  /// checkpoint's state).
  virtual void download(std::vector<float>& state, model::OptimizerState& optimizer) = 0;
  /// Replaces the model's state and the optimiser's state (resume): InputError when the state
  /// is another optimiser's, RuntimeError on a size mismatch.
  virtual void restore(std::span<const float> state, const model::OptimizerState& optimizer) = 0;

  /// The model on the host with the current parameters (the GPU downloads them first).
  virtual const model::Model& sync_host_model() = 0;
  /// The model on the host as of the last sync_host_model() or restore() (the CPU's is always
  /// current).
  virtual const model::Model& host_model() const noexcept = 0;
};

/// Batch norm's statistics summed over the trainers of a step (synchronised batch norm), on
/// every device: an MPI allreduce over the trainers with a bounded wait.
class TrainerStatReducer final : public model::StatReducer {
 public:
  /// Uses `trainers` (which must outlive this object).
  TrainerStatReducer(const comm::Communicator& trainers, std::chrono::duration<double> timeout)
      : trainers_(trainers), timeout_(timeout) {}
  void sum(std::span<double> values) override {
    if (trainers_.size() > 1) trainers_.allreduce_sum(values, timeout_);
  }

 private:
  const comm::Communicator& trainers_;
  std::chrono::duration<double> timeout_;
};

/// What a backend is built from besides its model.
struct BackendOptions {
  const Config* config = nullptr;
  const comm::Communicator* trainers = nullptr;
  std::chrono::duration<double> timeout{};  ///< cluster.peer_timeout_s
  int num_classes = 0;
  std::size_t max_batch = 0;  ///< this trainer's largest training batch (pre-allocation)
  DeviceChoice device;        ///< from choose_device()
  /// The training transform: how a backend that takes 8-bit batches normalises them.
  const data::SampleTransform* transform = nullptr;
};

/// The gradient exchange comm.strategy names: comm::KReduceSync for "kreduce", else
/// comm::MpiAllreduceSync, on host buffers of `parameters` floats.
std::unique_ptr<comm::GradientSync> make_gradient_sync(const Config& config,
                                                       const comm::Communicator& trainers,
                                                       std::size_t parameters,
                                                       std::chrono::duration<double> timeout);

/// The backend on the device options.device names: make_gpu_backend() for a GPU, else
/// make_cpu_backend().
std::unique_ptr<ComputeBackend> make_backend(model::Model model, const BackendOptions& options);

/// The CPU backend: `model`, model::make_optimizer() with the [train] options,
/// make_gradient_sync().
std::unique_ptr<ComputeBackend> make_cpu_backend(model::Model model, const BackendOptions& options);

/// The GPU backend on device options.device.gpu (made current by choose_device()): a
/// gpu::CudaModel of `model` (its layout and current state; `model` stays as the host copy).
/// Gradients are summed with NCCL, or through host memory with make_gradient_sync() for
/// comm.strategy = "kreduce" or when trainers share a GPU. RuntimeError "built without CUDA" in a
/// CPU-only build, and on CUDA errors.
std::unique_ptr<ComputeBackend> make_gpu_backend(model::Model model, const BackendOptions& options);

}  // namespace conflux::train
