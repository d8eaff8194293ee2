// The GPU compute backend (compute_backend.hpp) in the CUDA build: gpu::GpuModel on the trainer's
// device, batches staged through double-buffered pinned memory on a copy stream, gradients summed
// with NCCL on the compute stream (or through host memory with a comm::GradientSync).

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/gpu_model.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/nccl_allreduce.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/model/sgd.hpp"
#include "conflux/train/compute_backend.hpp"

namespace conflux::train {
namespace {

// Makes `device` current and returns it (to order it before the members that need it).
int activate(int device) {
  gpu::use_device(device);
  return device;
}

// One half of the input double buffer: a batch in pinned host memory, its device copy, and the
// events that order the two streams.
struct StagingSlot {
  gpu::PinnedBuffer<float> host_images;
  gpu::PinnedBuffer<model::Label> host_labels;
  gpu::DeviceBuffer<float> images;
  gpu::DeviceBuffer<model::Label> labels;
  gpu::Event copied;    // copy stream: the upload of host_* into images/labels is done
  gpu::Event consumed;  // compute stream: the step that read images/labels is done with them
  bool copy_recorded = false;
  bool consume_recorded = false;
  std::size_t capacity = 0;  // samples the buffers hold
  int n = 0;                 // samples of the staged batch
};

class GpuBackend final : public ComputeBackend {
 public:
  GpuBackend(model::Model host, const BackendOptions& o)
      : device_(activate(o.device.gpu)),
        description_(o.device.description),
        trainers_(*o.trainers),
        host_(std::move(host)),
        sample_floats_(model::Tensor::count_of(host_.input_shape())),
        // From the host model's parameters, not a fresh model of run.seed: weights loaded by
        // train.init_from must reach the GPU.
        model_(host_, model::SgdOptions{static_cast<float>(o.config->train().lr),
                                        static_cast<float>(o.config->train().momentum),
                                        static_cast<float>(o.config->train().weight_decay)}) {
    const auto max_batch = static_cast<int>(o.max_batch);
    model_.reserve(max_batch);
    for (StagingSlot& slot : slots_) grow(slot, o.max_batch);
    // NCCL needs one device per rank; K-Reduce (and trainers sharing a GPU) go through the host.
    use_nccl_ = o.config->comm().strategy != "kreduce" && !o.device.shared_gpu;
    if (!use_nccl_) {
      host_sync_ = make_gradient_sync(*o.config, trainers_, model_.num_params(), o.timeout);
      host_grads_ = gpu::PinnedBuffer<float>(model_.num_params());
      staging_reason_ = o.device.shared_gpu && o.config->comm().strategy != "kreduce"
                            ? "; trainers share a GPU, which NCCL does not allow"
                            : "";
    }
  }

  ~GpuBackend() override {
    try {
      model_.synchronize();  // nothing may still use the buffers and the communicator
      copy_.synchronize();
    } catch (...) {  // a destructor must not throw; the error was reported where it happened
    }
  }
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  std::string device_name() const override { return description_; }
  std::string sync_name() const override {
    if (use_nccl_) return "nccl-allreduce";
    return fmt::format("{} (GPU gradients staged through host memory{})", host_sync_->name(),
                       staging_reason_);
  }
  // GPU models have no buffers (batch norm is refused on the GPU): the state is the parameters.
  const std::vector<model::ParamInfo>& state_infos() const noexcept override {
    return model_.param_infos();
  }
  std::size_t state_size() const noexcept override { return model_.num_params(); }

  void connect() override {
    if (use_nccl_ && !nccl_) {
      gpu::use_device(device_);
      nccl_.emplace(trainers_);
    }
  }

  bool stages_ahead() const noexcept override { return true; }

  void stage(const data::Batch& batch) override {
    CONFLUX_CHECK(staged_ < 0, "GPU trainer: a batch is already staged");
    const std::size_t n = batch.labels.size();
    const std::size_t floats = batch.images.data.size();
    CONFLUX_CHECK(floats == n * sample_floats_,
                  "GPU trainer: a batch of {} samples has {} image floats, not {} per sample", n,
                  floats, sample_floats_);
    gpu::use_device(device_);
    StagingSlot& s = slots_[next_];
    // The pinned buffers may still be the source of this slot's previous upload.
    if (s.copy_recorded) s.copied.synchronize();
    grow(s, n);
    // Typed copies: a byte count here once copied a quarter of the labels after Label grew
    // from one byte to four.
    std::copy_n(batch.images.data.data(), floats, s.host_images.data());
    std::copy_n(batch.labels.data(), n, s.host_labels.data());
    // The device buffers may still be read by the step that used this slot last.
    if (s.consume_recorded) copy_.wait(s.consumed);
    gpu::copy_to_device(s.images.data(), s.host_images.data(), floats, copy_.get());
    gpu::copy_to_device(s.labels.data(), s.host_labels.data(), n, copy_.get());
    s.copied.record(copy_.get());
    s.copy_recorded = true;
    s.n = static_cast<int>(n);
    staged_ = next_;
    next_ = 1 - next_;
  }

  // The step matters only to dropout, which the GPU path refuses.
  void compute(float grad_scale, std::uint64_t /*global_step*/) override {
    CONFLUX_CHECK(staged_ >= 0, "GPU trainer: compute() without a staged batch");
    StagingSlot& s = slots_[static_cast<std::size_t>(std::exchange(staged_, -1))];
    if (host_sync_) host_sync_->progress();
    cudaStream_t stream = model_.compute_stream();
    CONFLUX_CUDA_CHECK(cudaStreamWaitEvent(stream, s.copied.get(), 0));
    model_.forward(s.images.data(), s.n);
    model_.loss_and_grad_async(s.labels.data(), grad_scale);
    model_.backward();
    s.consumed.record(stream);
    s.consume_recorded = true;
  }

  model::LossResult loss() override { return model_.loss_result(); }

  comm::Merged exchange() override {
    if (use_nccl_) {
      CONFLUX_CHECK(nccl_.has_value(), "GPU trainer: exchange() before connect()");
      const gpu::DeviceSpan<float> grads = model_.grads();
      nccl_->sum_async(grads.data, grads.size, model_.compute_stream());
      return comm::Merged::kCurrent;
    }
    model_.download_grads(host_grads_.span());  // waits for the backward pass
    const comm::Merged merged = host_sync_->exchange(host_grads_.span());
    if (merged != comm::Merged::kNone) model_.upload_grads(host_grads_.span());
    return merged;
  }

  bool drain() override {
    if (use_nccl_) return false;
    if (!host_sync_->drain(host_grads_.span())) return false;
    model_.upload_grads(host_grads_.span());
    return true;
  }

  void progress() override {
    if (host_sync_) host_sync_->progress();
  }

  // Never called: train.noise_scale is one of the keys the GPU path refuses
  // (config::gpu_unsupported_key), so such a run computes on the CPU.
  double gradient_sum_of_squares() override {
    CONFLUX_CHECK(false, "the gradient noise scale is not implemented on the GPU path");
    return 0.0;
  }

  void apply(double lr) override {
    model_.sgd_step(static_cast<float>(lr));
    ++sgd_steps_;
  }
  double lr() const override { return model_.sgd_options().lr; }

  model::LossResult evaluate(const model::Tensor& images,
                             std::span<const model::Label> labels) override {
    const std::size_t n = labels.size();
    const std::size_t floats = images.data.size();
    CONFLUX_CHECK(floats == n * sample_floats_,
                  "GPU trainer: an evaluation batch of {} samples has {} image floats", n, floats);
    gpu::use_device(device_);
    if (eval_images_.size() < floats || eval_labels_.size() < n) {
      model_.synchronize();  // the old buffers may still be read
      eval_images_ = gpu::DeviceBuffer<float>(std::max(floats, eval_images_.size()));
      eval_labels_ = gpu::DeviceBuffer<model::Label>(std::max(n, eval_labels_.size()));
    }
    // From pageable memory: each copy returns once the host data has been taken.
    cudaStream_t stream = model_.compute_stream();
    gpu::copy_to_device(eval_images_.data(), images.data.data(), floats, stream);
    gpu::copy_to_device(eval_labels_.data(), labels.data(), n, stream);
    model_.forward(eval_images_.data(), static_cast<int>(n));
    return model_.loss_and_grad(eval_labels_.data(), 0.0f);
  }

  // The GPU runs model::Sgd only (train.optimizer = "sgd" is checked before the backend is
  // built): its state is SGD's, with the momentum buffer on the device.
  void download(std::vector<float>& params, model::OptimizerState& optimizer) override {
    params.resize(model_.num_params());
    model_.download_params(params);
    optimizer.name = "sgd";
    optimizer.steps = sgd_steps_;
    optimizer.buffers.resize(1);
    optimizer.buffers[0].name = model::kSgdMomentumBuffer;
    optimizer.buffers[0].values.resize(model_.num_params());
    model_.download_velocity(optimizer.buffers[0].values);
  }

  void restore(std::span<const float> params, const model::OptimizerState& optimizer) override {
    // The host optimiser checks the state (its name, buffers and sizes) as the CPU's does.
    model::Sgd(model_.sgd_options(), model_.num_params()).restore(optimizer);
    model_.upload_params(params);
    model_.upload_velocity(optimizer.buffers[0].values, optimizer.steps > 0);
    sgd_steps_ = optimizer.steps;
    std::copy(params.begin(), params.end(), host_.params().begin());
  }

  const model::Model& sync_host_model() override {
    model_.download_params(host_.params());
    return host_;
  }
  const model::Model& host_model() const noexcept override { return host_; }

 private:
  // Makes room in `s` for batches of `n` samples. Replaced buffers are idle first: their last
  // upload is done and the last step that read them has finished.
  void grow(StagingSlot& s, std::size_t n) {
    if (n <= s.capacity && s.capacity > 0) return;
    if (s.copy_recorded) s.copied.synchronize();
    if (s.consume_recorded) s.consumed.synchronize();
    s.capacity = std::max<std::size_t>(n, 1);
    s.host_images = gpu::PinnedBuffer<float>(s.capacity * sample_floats_);
    s.host_labels = gpu::PinnedBuffer<model::Label>(s.capacity);
    s.images = gpu::DeviceBuffer<float>(s.capacity * sample_floats_);
    s.labels = gpu::DeviceBuffer<model::Label>(s.capacity);
  }

  int device_;
  std::string description_;
  const comm::Communicator& trainers_;
  model::Model host_;  // the host copy for callbacks, model.h5 and the digest
  std::size_t sample_floats_;
  gpu::GpuModel model_;
  std::uint64_t sgd_steps_ = 0;  // updates applied (the checkpoint's /optimizer/steps)
  gpu::Stream copy_;             // host-to-device uploads of the batches
  std::array<StagingSlot, 2> slots_;
  int staged_ = -1;  // slot of the batch the next compute() uses, -1 when none
  int next_ = 0;     // slot the next stage() fills
  bool use_nccl_ = false;
  std::optional<gpu::NcclAllreduce> nccl_;         // NCCL: set up by connect()
  std::unique_ptr<comm::GradientSync> host_sync_;  // otherwise: on host_grads_
  gpu::PinnedBuffer<float> host_grads_;
  std::string staging_reason_;
  gpu::DeviceBuffer<float> eval_images_;
  gpu::DeviceBuffer<model::Label> eval_labels_;
};

}  // namespace

std::unique_ptr<ComputeBackend> make_gpu_backend(model::Model model,
                                                 const BackendOptions& options) {
  CONFLUX_CHECK(options.device.device == ComputeDevice::kGpu && options.device.gpu >= 0,
                "GPU trainer: no GPU was chosen (train.device)");
  return std::make_unique<GpuBackend>(std::move(model), options);
}

}  // namespace conflux::train
