// The GPU compute backend (compute_backend.hpp) in the CUDA build: the one model's device
// kernels (gpu::CudaModel) on the trainer's device, batches staged through double-buffered
// pinned memory on a copy stream, gradients exchanged by a comm::GradientSync over device
// memory (NCCL, or a host strategy on a pinned copy).

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "conflux/comm/gradient_buckets.hpp"
#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cuda_model.hpp"
#include "conflux/gpu/gradient_syncs.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/runtime.hpp"
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
  gpu::PinnedBuffer<std::uint32_t> host_samples;  // the batch's dataset indices (dropout)
  data::PixelBuffer host_pixels;                  // a batch's 8-bit images, taken from it (pinned)
  gpu::DeviceBuffer<float> images;
  gpu::DeviceBuffer<std::uint8_t> pixels;
  gpu::DeviceBuffer<model::Label> labels;
  gpu::DeviceBuffer<std::uint32_t> samples;
  bool staged_pixels = false;   // the staged batch is in `pixels`, not `images`
  bool staged_samples = false;  // the staged batch has sample indices
  gpu::Event copied;            // copy stream: the upload of host_* into images/labels is done
  gpu::Event consumed;  // compute stream: the step that read images/labels is done with them
  bool copy_recorded = false;
  bool consume_recorded = false;
  std::size_t capacity = 0;  // samples the buffers hold
  int n = 0;                 // samples of the staged batch
};

// The model's gradient buckets of `bucket_mb` MiB in backward order (the plan's order reversed:
// parameters lie in layer order, so a bucket is one contiguous range); none for 0.
std::optional<comm::GradientBuckets> gradient_buckets(const model::Model& model, double bucket_mb) {
  if (bucket_mb <= 0) return std::nullopt;
  std::vector<comm::GradientRange> layers;
  for (const model::LayerSlice& slice : model.layer_slices()) {
    layers.push_back({slice.param_offset, slice.param_offset + slice.param_count});
  }
  const std::vector<std::size_t>& order = model.plan().order;
  const std::vector<std::size_t> backward(order.rbegin(), order.rend());
  const auto values = static_cast<std::size_t>(bucket_mb * (1 << 20) / sizeof(float));
  return comm::GradientBuckets(layers, backward, std::max<std::size_t>(values, 1));
}

class GpuBackend final : public ComputeBackend {
 public:
  GpuBackend(model::Model host, const BackendOptions& o)
      : device_(activate(o.device.gpu)),
        description_(o.device.description),
        trainers_(*o.trainers),
        host_(std::move(host)),
        sample_floats_(model::Tensor::count_of(host_.input_shape())),
        pinned_(device_),
        // From the host model's state, not a fresh model of run.seed: weights loaded by
        // train.init_from reach the GPU.
        model_(host_, o.config->train(),
               gpu::CudaModelOptions{
                   .precision = gpu::precision_named(o.config->train().precision.c_str()),
                   .deterministic = o.config->train().gpu_deterministic,
                   .workspace_limit_bytes =
                       static_cast<std::size_t>(o.config->train().gpu_workspace_mb) << 20,
                   .graphs = o.config->train().gpu_graphs}),
        reducer_(*o.trainers, o.timeout),
        seed_(o.config->run().seed),
        config_(o.config),
        timeout_(o.timeout),
        shared_gpu_(o.device.shared_gpu) {
    const std::vector<LayerSpec>& specs = host_.specs();
    sums_statistics_ = trainers_.size() > 1 &&
                       std::any_of(specs.begin(), specs.end(),
                                   [](const LayerSpec& s) { return s.type == "batchnorm"; });
    if (o.transform != nullptr && o.transform->pixel_output()) {
      model_.set_pixel_normalisation(o.transform->pixel_scale(), o.transform->pixel_shift());
      takes_pixels_ = true;
    }
    for (StagingSlot& slot : slots_) {
      slot.host_pixels = data::PixelBuffer(&pinned_);
      grow(slot, o.max_batch);
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
    const std::string why = uses_nccl() || config_->comm().strategy == "kreduce"
                                ? ""
                                : "; trainers share a GPU, which NCCL does not allow";
    return sync_ ? sync_->name() + why : "not connected";
  }
  std::string compute_summary() const override {
    if (!config_->train().gpu_graphs)
      return "training steps ran kernel by kernel (train.gpu_graphs = false)";
    const gpu::GraphStats g = model_.graph_stats();
    if (!g.failure.empty()) {
      return fmt::format("CUDA graphs off after a failed capture, steps ran kernel by kernel: {}",
                         g.failure);
    }
    return fmt::format("CUDA graphs: {} captured, {} of {} training steps replayed", g.captures,
                       g.replays, steps_);
  }
  const std::vector<model::ParamInfo>& state_infos() const noexcept override {
    return host_.state_infos();
  }
  std::size_t state_size() const noexcept override { return host_.state().size(); }

  // NCCL needs one device per rank; K-Reduce (and trainers sharing a GPU) go through the host.
  void connect() override {
    if (sync_) return;
    gpu::use_device(device_);
    if (uses_nccl()) {
      std::unique_ptr<gpu::NcclSums> nccl = gpu::make_nccl_sync(trainers_, model_.stream());
      // Batch norm's global statistics summed on the device, on the gradients' communicator.
      if (sums_statistics()) stat_sum_ = nccl.get();
      sync_ = std::move(nccl);
      // Announcing buckets runs host code during backward, which a captured step cannot: with
      // graphs the gradients are summed after backward. One trainer has nothing to overlap.
      if (trainers_.size() > 1 && !(config_->train().gpu_graphs && captures_steps())) {
        buckets_ = gradient_buckets(host_, config_->comm().bucket_mb);
      }
    } else {
      sync_ = gpu::make_host_staged_sync(
          make_gradient_sync(*config_, trainers_, model_.num_params(), timeout_),
          model_.num_params(), model_.stream());
    }
  }

  bool stages_ahead() const noexcept override { return true; }
  std::pmr::memory_resource* pixel_memory() noexcept override {
    return takes_pixels_ ? &pinned_ : nullptr;
  }

  void stage(data::Batch& batch) override {
    CONFLUX_CHECK(staged_ < 0, "GPU trainer: a batch is already staged");
    const std::size_t n = batch.labels.size();
    const bool pixels = batch.encoding == data::ImageEncoding::kPixels;
    const std::size_t values = pixels ? batch.pixels.size() : batch.images.data.size();
    CONFLUX_CHECK(values == n * sample_floats_ && pixels == takes_pixels_,
                  "GPU trainer: a batch of {} samples has {} image {}, not {} {} per sample", n,
                  values, pixels ? "bytes" : "floats", sample_floats_,
                  takes_pixels_ ? "bytes" : "floats");
    gpu::use_device(device_);
    StagingSlot& s = slots_[next_];
    // The pinned buffers may still be the source of this slot's previous upload.
    if (s.copy_recorded) s.copied.synchronize();
    grow(s, n);
    if (pixels) {
      // The batch was built or received in pinned memory: upload from its own buffer, and
      // give it this slot's idle one in exchange (no host copy).
      swap(s.host_pixels, batch.pixels);
    } else {
      std::copy_n(batch.images.data.data(), values, s.host_images.data());
    }
    // Typed copies: a byte count here once copied a quarter of the labels after Label grew
    // from one byte to four.
    std::copy_n(batch.labels.data(), n, s.host_labels.data());
    // Only a dropout layer reads them; the others' steps upload none.
    s.staged_samples = batch.samples.size() == n && model_.reads_samples();
    if (s.staged_samples) std::copy_n(batch.samples.data(), n, s.host_samples.data());
    // The device buffers may still be read by the step that used this slot last.
    if (s.consume_recorded) copy_.wait(s.consumed);
    if (pixels) {
      gpu::copy_to_device(s.pixels.data(), s.host_pixels.data(), values, copy_.get());
    } else {
      gpu::copy_to_device(s.images.data(), s.host_images.data(), values, copy_.get());
    }
    gpu::copy_to_device(s.labels.data(), s.host_labels.data(), n, copy_.get());
    if (s.staged_samples) {
      gpu::copy_to_device(s.samples.data(), s.host_samples.data(), n, copy_.get());
    }
    s.staged_pixels = pixels;
    s.copied.record(copy_.get());
    s.copy_recorded = true;
    s.n = static_cast<int>(n);
    staged_ = next_;
    next_ = 1 - next_;
  }

  void compute(float grad_scale, std::uint64_t global_step) override {
    CONFLUX_CHECK(staged_ >= 0, "GPU trainer: compute() without a staged batch");
    StagingSlot& s = slots_[static_cast<std::size_t>(std::exchange(staged_, -1))];
    if (sync_) sync_->progress();
    cudaStream_t stream = model_.stream();
    CONFLUX_CUDA_CHECK(cudaStreamWaitEvent(stream, s.copied.get(), 0));
    gpu::TrainStep step{
        .batch = {.images = s.staged_pixels ? nullptr : s.images.data(),
                  .pixels = s.staged_pixels ? s.pixels.data() : nullptr,
                  .labels = s.labels.data(),
                  .samples = s.staged_samples ? s.samples.data() : nullptr,
                  .n = s.n},
        .grad_scale = grad_scale,
        .seed = seed_,
        .step = global_step,
        // One trainer's statistics are the global batch's: nothing to sum. Several sum them
        // with NCCL, or through the host where NCCL is not used (K-Reduce, a shared GPU).
        .reducer = sums_statistics() && stat_sum_ == nullptr ? &reducer_ : nullptr,
        .device_sum = stat_sum_,
        .layer_done = {}};
    // Each bucket's sum starts as soon as backward has produced it (comm.bucket_mb).
    if (buckets_) {
      buckets_->reset();
      step.layer_done = [this](std::size_t layer) {
        if (const auto bucket = buckets_->layer_done(layer))
          sync_->gradients_ready(grads(), *bucket);
      };
    }
    model_.compute(step);
    ++steps_;
    s.consumed.record(stream);
    s.consume_recorded = true;
  }

  model::LossResult take_losses() override { return model_.take_losses(); }

  comm::Merged exchange() override { return connected().exchange(grads()); }
  bool drain() override { return connected().drain(grads()); }
  void progress() override {
    if (sync_) sync_->progress();
  }
  double gradient_sum_of_squares() override { return model_.grad_sum_of_squares(); }
  void apply(double lr) override { model_.apply(lr); }
  double lr() const override { return model_.lr(); }
  double clipped_grad_norm() override { return model_.clipped_grad_norm(); }

  model::LossResult evaluate(const data::Batch& batch) override {
    const std::size_t n = batch.labels.size();
    const bool pixels = batch.encoding == data::ImageEncoding::kPixels;
    const std::size_t values = pixels ? batch.pixels.size() : batch.images.data.size();
    CONFLUX_CHECK(values == n * sample_floats_ && (!pixels || takes_pixels_),
                  "GPU trainer: an evaluation batch of {} samples has {} image {}", n, values,
                  pixels ? "bytes" : "floats");
    gpu::use_device(device_);
    const std::size_t held = pixels ? eval_pixels_.size() : eval_images_.size();
    if (held < values || eval_labels_.size() < n) {
      model_.synchronize();  // the old buffers may still be read
      if (pixels) {
        eval_pixels_ = gpu::DeviceBuffer<std::uint8_t>(std::max(values, held));
      } else {
        eval_images_ = gpu::DeviceBuffer<float>(std::max(values, held));
      }
      eval_labels_ = gpu::DeviceBuffer<model::Label>(std::max(n, eval_labels_.size()));
    }
    // evaluate() waits for its loss, so the host memory is read before the batch changes.
    gpu::copy_to_device(eval_labels_.data(), batch.labels.data(), n, model_.stream());
    const int count = static_cast<int>(n);
    if (pixels) {
      gpu::copy_to_device(eval_pixels_.data(), batch.pixels.data(), values, model_.stream());
      return model_.evaluate(eval_pixels_.data(), eval_labels_.data(), count);
    }
    gpu::copy_to_device(eval_images_.data(), batch.images.data.data(), values, model_.stream());
    return model_.evaluate(eval_images_.data(), eval_labels_.data(), count);
  }

  void download(std::vector<float>& state, model::OptimizerState& optimizer) override {
    state.resize(model_.state_size());
    model_.download(state, optimizer);
  }

  void restore(std::span<const float> state, const model::OptimizerState& optimizer) override {
    CONFLUX_CHECK(state.size() == host_.state().size(),
                  "restore: {} values for a model state of {}", state.size(), host_.state().size());
    model_.restore(state, optimizer);
    std::copy(state.begin(), state.end(), host_.state().begin());
  }

  const model::Model& sync_host_model() override {
    model_.download_state(host_.state());
    return host_;
  }
  const model::Model& host_model() const noexcept override { return host_; }

 private:
  bool uses_nccl() const { return config_->comm().strategy != "kreduce" && !shared_gpu_; }
  bool sums_statistics() const noexcept { return sums_statistics_; }
  // Steps can be captured as graphs: no statistics sum between kernels (CudaModel::compute).
  bool captures_steps() const { return !sums_statistics(); }
  comm::GradientSync& connected() {
    CONFLUX_CHECK(sync_ != nullptr, "GPU trainer: a gradient exchange before connect()");
    return *sync_;
  }
  std::span<float> grads() { return {model_.grads(), model_.num_params()}; }

  // Makes room in `s` for batches of `n` samples. Replaced buffers are idle first: their last
  // upload is done and the last step that read them has finished.
  void grow(StagingSlot& s, std::size_t n) {
    if (n <= s.capacity && s.capacity > 0) return;
    if (s.copy_recorded) s.copied.synchronize();
    if (s.consume_recorded) s.consumed.synchronize();
    s.capacity = std::max<std::size_t>(n, 1);
    s.host_labels = gpu::PinnedBuffer<model::Label>(s.capacity);
    s.host_samples = gpu::PinnedBuffer<std::uint32_t>(s.capacity);
    s.samples = gpu::DeviceBuffer<std::uint32_t>(s.capacity);
    // One form of the images per slot: bytes where the loader delivers them, else floats.
    if (takes_pixels_) {
      s.pixels = gpu::DeviceBuffer<std::uint8_t>(s.capacity * sample_floats_);
    } else {
      s.host_images = gpu::PinnedBuffer<float>(s.capacity * sample_floats_);
      s.images = gpu::DeviceBuffer<float>(s.capacity * sample_floats_);
    }
    s.labels = gpu::DeviceBuffer<model::Label>(s.capacity);
  }

  int device_;
  std::string description_;
  const comm::Communicator& trainers_;
  model::Model host_;  // the host copy for callbacks, model.h5 and the digest
  std::size_t sample_floats_;
  gpu::PinnedMemory pinned_;  // where the loader builds and receives 8-bit batches
  gpu::CudaModel model_;
  TrainerStatReducer reducer_;
  std::uint64_t seed_;
  const Config* config_;
  std::chrono::duration<double> timeout_;
  bool shared_gpu_;
  bool takes_pixels_ = false;  // the transform makes 8-bit images: batches arrive as pixels
  // Batch norm's statistics are the global batch's: several trainers sum them each pass.
  bool sums_statistics_ = false;
  gpu::Stream copy_;  // host-to-device uploads of the batches
  std::array<StagingSlot, 2> slots_;
  int staged_ = -1;          // slot of the batch the next compute() uses, -1 when none
  std::uint64_t steps_ = 0;  // compute() calls
  int next_ = 0;             // slot the next stage() fills
  std::unique_ptr<comm::GradientSync> sync_;  // set up by connect()
  gpu::DeviceStatSum* stat_sum_ = nullptr;    // sync_'s NCCL, when it sums batch norm's statistics
  std::optional<comm::GradientBuckets> buckets_;  // with NCCL and comm.bucket_mb > 0
  gpu::DeviceBuffer<float> eval_images_;
  gpu::DeviceBuffer<std::uint8_t> eval_pixels_;
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
