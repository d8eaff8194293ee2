#pragma once
/// @file device_model.hpp
/// The one model on a device: model::Model's graph plan, layout and state, run by the device
/// kernels of its layers (device_layers.hpp) through the same GraphWalk as the CPU. Nothing of
/// the model is re-implemented here: the specs are checked, wired, shaped and initialised by
/// model::Model; this class holds the device copies of its state and gradients, the kernels,
/// and the loss of the last batch.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layers.hpp"
#include "conflux/gpu/kernels/elementwise.hpp"
#include "conflux/gpu/kernels/loss.hpp"
#include "conflux/gpu/kernels/optimizer.hpp"
#include "conflux/model/graph_walk.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"

namespace conflux::gpu {

template <class Ex>
class DeviceModel {
 public:
  using Tensor = DeviceTensor<Ex>;
  template <class T>
  using Buffer = typename Ex::template Buffer<T>;

  /// Builds the device kernels of `model`'s layers on `ex` (which must outlive this object),
  /// with activations and their gradients of element type `activations`, and uploads the
  /// model's state: the device starts where the host model is (weights loaded by
  /// train.init_from included). InputError naming the layer when a type has no device kernel.
  DeviceModel(Ex& ex, const model::Model& model, DType activations = DType::kF32)
      : ex_(&ex),
        activations_(activations),
        plan_(model.plan()),
        input_shape_(model.input_shape()),
        classes_(model.output_shape().at(0)),
        num_params_(model.params().size()),
        state_(model.state().size()),
        grads_(model.params().size()),
        walk_(plan_.size()),
        step_(1) {
    build_layers(model);
    ex.zero(step_.data(), 1);
    ex.upload(state_.data(), model.state().data(), model.state().size());
    ex.zero(grads_.data(), num_params_);
    ex.synchronize();  // the upload read the host model's memory
  }

  /// Parameters (then buffers: running statistics) on the device, in model::Model's layout.
  float* state() noexcept { return state_.data(); }
  float* params() noexcept { return state_.data(); }
  float* grads() noexcept { return grads_.data(); }
  std::size_t num_params() const noexcept { return num_params_; }
  std::size_t state_size() const noexcept { return state_.size(); }
  Ex& executor() noexcept { return *ex_; }

  /// Forward pass of `n` samples at `images` (device memory in the model's input layout,
  /// channels-first [n, C, H, W] or [n, F]); `pass` as model::Model::forward's (its sample
  /// indices are copied to the device when a dropout layer needs them). Returns the logits
  /// [n, classes].
  const Tensor& forward(const float* images, int n, const model::Pass& pass) {
    stage_input(images, n);
    return forward_staged(n, pass);
  }

  /// forward() of `n` 8-bit images at `pixels` (device memory, channels-first as the data
  /// pipeline makes them), normalised on the device by set_pixel_normalisation()'s factors:
  /// the same input values as forward() of the floats SampleTransform::normalise makes.
  const Tensor& forward(const std::uint8_t* pixels, int n, const model::Pass& pass) {
    stage_pixels(pixels, n);
    return forward_staged(n, pass);
  }

  /// Whether training passes read the batch's sample indices and the step number (a dropout
  /// layer's masks); without, StepBatch::samples and set_step() are not needed.
  bool reads_samples() const noexcept { return needs_samples_; }

  /// Sets the global step number the next training passes draw dropout masks for. A launch
  /// of its own, outside train_step(), so that a captured step reads the current number; none
  /// when no layer reads it.
  void set_step(std::uint64_t step) {
    if (!needs_samples_) return;
    ex_->for_each(1, kernels::Assign<std::uint64_t>{step_.data(), step});
  }

  /// A training step of `batch` with the step number of the last set_step(): forward pass,
  /// loss (with its gradient, added to take_losses()'s totals) and backward pass, as
  /// forward(), loss(), accumulate_loss() and backward() make them. Nothing but device work
  /// with the same arguments every time it is called with the same batch and options, and no
  /// transfer from or wait for the host, so that a CUDA graph can capture it. `layer_done` as
  /// backward()'s.
  void train_step(const StepBatch& batch, const StepOptions& options,
                  const std::function<void(std::size_t)>& layer_done = {}) {
    if (batch.pixels != nullptr) {
      stage_pixels(batch.pixels, batch.n);
    } else {
      stage_input(batch.images, batch.n);
    }
    pass_ = DevicePass{.training = true,
                       .seed = options.seed,
                       .step = step_.data(),
                       .samples = needs_samples_ ? batch.samples : nullptr,
                       .reducer = options.reducer,
                       .device_sum = options.device_sum};
    Calls calls{*this};
    walk_.forward(plan_, input_, calls);
    loss(batch.labels, options.grad_scale, options.label_smoothing, true);
    accumulate_loss();
    backward(layer_done);
  }

  /// The per-channel factors of data::normalised_pixel for forward() of pixels
  /// (SampleTransform::pixel_scale/pixel_shift); InputError unless there is one per input
  /// channel.
  void set_pixel_normalisation(std::span<const float> scale, std::span<const float> shift) {
    const std::size_t values = model::Tensor::count_of(input_shape_);
    const std::size_t channels =
        input_shape_.size() == 3 ? static_cast<std::size_t>(input_shape_[0]) : scale.size();
    CONFLUX_REQUIRE(scale.size() == channels && shift.size() == channels && channels > 0 &&
                        values % channels == 0,
                    "device model: {} scale and {} shift factors for an input of {} values "
                    "({} channels)",
                    scale.size(), shift.size(), values, channels);
    pixel_factors_ = Buffer<float>(2 * channels);
    ex_->upload(pixel_factors_.data(), scale.data(), channels);
    ex_->upload(pixel_factors_.data() + channels, shift.data(), channels);
    ex_->synchronize();  // the uploads read the caller's memory
    pixel_channels_ = channels;
  }

  /// Softmax cross-entropy of the last forward's logits against `labels` (device, n of them)
  /// with `label_smoothing`, in fp32 and double whatever the activations; with `gradient`,
  /// dL/dlogits scaled by `grad_scale` for backward(). Enqueued; loss_result() collects it.
  void loss(const model::Label* labels, float grad_scale, double label_smoothing, bool gradient) {
    const Tensor& logits = walk_.logits();
    const int n = logits.batch();
    const std::size_t count = logits.size();
    ensure(losses_, static_cast<std::size_t>(n));
    ensure(status_, static_cast<std::size_t>(n));
    const float* x = logits.template data<float>();
    float* grad = nullptr;
    if (gradient) grad_logits_.resize(logits.shape, activations_);
    if (activations_ == DType::kBf16) {
      // autocast's rule: the loss in fp32 on a float copy of the logits, the gradient back in
      // bf16 for the backward pass.
      ensure(logits_f32_, 2 * count);
      ex_->for_each(count,
                    kernels::Cast<Bf16, float>{logits.template data<Bf16>(), logits_f32_.data()});
      x = logits_f32_.data();
      if (gradient) grad = logits_f32_.data() + count;
    } else if (gradient) {
      grad = grad_logits_.template data<float>();
    }
    ex_->for_each(static_cast<std::size_t>(n),
                  kernels::SoftmaxCrossEntropy{x, labels, classes_, 1.0 - label_smoothing,
                                               label_smoothing / static_cast<double>(classes_),
                                               grad_scale, losses_.data(), status_.data(), grad});
    if (gradient && activations_ == DType::kBf16) {
      ex_->for_each(count, kernels::Cast<float, Bf16>{grad, grad_logits_.template data<Bf16>()});
    }
    loss_n_ = n;
  }

  /// The last forward's logits as floats (waits).
  std::vector<float> download_logits() {
    const Tensor& logits = walk_.logits();
    std::vector<float> out(logits.size());
    if (activations_ == DType::kF32) {
      ex_->download(out.data(), logits.template data<float>(), out.size());
      ex_->synchronize();
      return out;
    }
    std::vector<Bf16> low(logits.size());
    ex_->download(low.data(), logits.template data<Bf16>(), low.size());
    ex_->synchronize();
    std::transform(low.begin(), low.end(), out.begin(), [](Bf16 v) { return to_float(v); });
    return out;
  }

  /// The element type of the activations.
  DType activations() const noexcept { return activations_; }

  /// The summed loss, correct and skipped samples of the last loss() (waits for them);
  /// InputError for a label outside the classes, as on the CPU.
  model::LossResult loss_result() {
    const auto n = static_cast<std::size_t>(loss_n_);
    host_losses_.resize(n);
    host_status_.resize(n);
    ex_->download(host_losses_.data(), losses_.data(), n);
    ex_->download(host_status_.data(), status_.data(), n);
    ex_->synchronize();
    model::LossResult r;
    for (std::size_t i = 0; i < n; ++i) {
      CONFLUX_REQUIRE(host_status_[i] != -1,
                      "the label of sample {} is out of range for {} classes", i, classes_);
      if (host_status_[i] == 2) {
        ++r.skipped;
        continue;
      }
      r.loss_sum += host_losses_[i];
      if (host_status_[i] == 1) ++r.correct;
    }
    return r;
  }

  /// Adds the last loss()'s results to the totals take_losses() returns; enqueued, so that a
  /// training step need not wait for its loss.
  void accumulate_loss() {
    ensure(loss_total_, 1);
    ensure(loss_counts_, 3);
    if (!loss_totals_zeroed_) zero_loss_totals();
    ex_->for_each(1, kernels::AccumulateLoss{losses_.data(), status_.data(),
                                             static_cast<std::size_t>(loss_n_), loss_total_.data(),
                                             loss_counts_.data()});
  }

  /// The summed loss, correct and skipped samples of every accumulate_loss() since the last
  /// call (waits for them), and zeroes the totals; InputError when a label was out of range.
  model::LossResult take_losses() {
    model::LossResult r;
    if (!loss_totals_zeroed_) return r;  // nothing accumulated
    std::int64_t counts[3] = {0, 0, 0};
    ex_->download(&r.loss_sum, loss_total_.data(), 1);
    ex_->download(counts, loss_counts_.data(), 3);
    ex_->synchronize();
    zero_loss_totals();
    CONFLUX_REQUIRE(counts[2] == 0,
                    "the label of sample {} of a training batch is out of range for {} classes",
                    counts[2] - 1, classes_);
    r.correct = static_cast<int>(counts[0]);
    r.skipped = static_cast<int>(counts[1]);
    return r;
  }

  /// Backward pass from the last loss()'s gradient; overwrites grads(). `layer_done(i)`, when
  /// set, is called once layer i's parameter gradients are enqueued (last layer first), so
  /// that a gradient exchange can start on a bucket while backward goes on.
  void backward(const std::function<void(std::size_t)>& layer_done = {}) {
    Calls calls{*this, layer_done ? &layer_done : nullptr};
    walk_.backward(plan_, grad_logits_, calls);
  }

  /// Sum of squares of grads() in double (model::sum_of_squares up to summation order); waits.
  double grad_sum_of_squares() {
    sum_of_squares_enqueue();
    double out = 0.0;
    ex_->download(&out, norm_.data(), 1);
    ex_->synchronize();
    return out;
  }

  /// Scales grads() to a global norm of at most `max_norm` (model::clip_grad_norm), without
  /// waiting for the norm on the host.
  void clip_grads(float max_norm) {
    sum_of_squares_enqueue();
    ex_->for_each(num_params_, kernels::ClipByNorm{grads_.data(), norm_.data(), max_norm});
  }

  /// The L2 norm the last clip_grads() measured, before scaling (waits). Valid until the next
  /// sum of squares (grad_sum_of_squares(), clip_grads()).
  double clipped_norm() {
    double out = 0.0;
    ex_->download(&out, norm_.data(), 1);
    ex_->synchronize();
    return std::sqrt(out);
  }

  /// Copies `state` (model::Model::state() layout) to the device.
  void upload_state(std::span<const float> state) {
    CONFLUX_CHECK(state.size() == state_.size(), "device model: uploading {} state floats into {}",
                  state.size(), state_.size());
    ex_->upload(state_.data(), state.data(), state.size());
    ex_->synchronize();
  }
  /// Copies the device's state into `state` (waits).
  void download_state(std::span<float> state) {
    CONFLUX_CHECK(state.size() == state_.size(),
                  "device model: downloading {} state floats into {}", state_.size(), state.size());
    ex_->download(state.data(), state_.data(), state.size());
    ex_->synchronize();
  }

 private:
  // The walk's calls on this device.
  struct Calls {
    DeviceModel& m;
    const std::function<void(std::size_t)>* layer_done = nullptr;
    void forward(std::size_t i, std::span<const Tensor* const> in, Tensor& out) {
      m.layers_[i]->forward(*m.ex_, m.pass_, in, out);
    }
    void backward(std::size_t i, std::span<const Tensor* const> in, const Tensor& grad_out,
                  std::span<Tensor* const> grad_in) {
      for (std::size_t k = 0; k < grad_in.size(); ++k) {
        // An input's gradient has the input's shape and type.
        if (grad_in[k] != nullptr) m.provide(*grad_in[k], in[k]->size() * size_of(in[k]->dtype));
      }
      m.layers_[i]->backward(*m.ex_, m.pass_, in, grad_out, grad_in);
      if (layer_done != nullptr) (*layer_done)(i);
    }
    void release(Tensor& gradient) { m.release(gradient); }
    void accumulate(Tensor& sum, const Tensor& add) {
      with_element(sum.dtype, [&](auto zero) {
        using T = decltype(zero);
        T* s = sum.template data<T>();
        m.ex_->for_each(sum.size(), kernels::AddInto<T>{s, add.template data<T>(), s, false});
      });
    }
  };

  void build_layers(const model::Model& model) {
    const std::vector<LayerSpec>& specs = model.specs();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      try {
        layers_.push_back(make_device_layer<Ex>({.spec = &specs[i],
                                                 .index = i,
                                                 .inputs = model.input_shapes()[i],
                                                 .output = model.output_shapes()[i],
                                                 .activations = activations_}));
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", model::layer_label(specs, i), e.what()), e.file(),
                         e.line());
      }
      const model::LayerSlice& slice = model.layer_slices()[i];
      layers_.back()->bind({.params = state_.data() + slice.param_offset,
                            .grads = grads_.data() + slice.param_offset,
                            .param_count = slice.param_count,
                            .buffers = state_.data() + slice.buffer_offset,
                            .buffer_count = slice.buffer_count});
      if (specs[i].type == "dropout") needs_samples_ = true;
    }
    // The CPU plan fused these ReLUs into the layers feeding them: so must the device.
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      if (plan_.runs(i)) continue;
      CONFLUX_CHECK(layers_[plan_.holder[i]]->fuse_relu(),
                    "{}: its device kernels cannot fuse the ReLU after it",
                    model::layer_label(specs, plan_.holder[i]));
    }
  }

  const Tensor& forward_staged(int n, const model::Pass& pass) {
    pass_ = device_pass(pass, n);
    Calls calls{*this};
    return walk_.forward(plan_, input_, calls);
  }

  void resize_input(int n) {
    std::vector<int> shape{n};
    shape.insert(shape.end(), input_shape_.begin(), input_shape_.end());
    input_.resize(std::move(shape), activations_);
  }

  void stage_pixels(const std::uint8_t* pixels, int n) {
    CONFLUX_CHECK(pixel_channels_ > 0,
                  "device model: 8-bit images without set_pixel_normalisation()");
    resize_input(n);
    const float* scale = pixel_factors_.data();
    const float* shift = scale + pixel_channels_;
    with_element(activations_, [&](auto zero) {
      using T = decltype(zero);
      T* to = input_.template data<T>();
      if (input_shape_.size() == 3) {
        ex_->for_each(input_.size(),
                      kernels::PixelsToChannelsLast<T>{pixels, to, scale, shift,
                                                       static_cast<std::size_t>(input_shape_[0]),
                                                       static_cast<std::size_t>(input_shape_[1]),
                                                       static_cast<std::size_t>(input_shape_[2])});
      } else {
        const std::size_t values = model::Tensor::count_of(input_shape_);
        ex_->for_each(input_.size(), kernels::NormalisePixels<T>{pixels, to, scale, shift, values,
                                                                 values / pixel_channels_});
      }
    });
  }

  void stage_input(const float* images, int n) {
    resize_input(n);
    with_element(activations_, [&](auto zero) {
      using T = decltype(zero);
      if (input_shape_.size() == 3) {
        ex_->for_each(input_.size(),
                      kernels::ToChannelsLast<float, T>{images, input_.template data<T>(),
                                                        static_cast<std::size_t>(input_shape_[0]),
                                                        static_cast<std::size_t>(input_shape_[1]),
                                                        static_cast<std::size_t>(input_shape_[2])});
      } else {
        ex_->for_each(input_.size(), kernels::Cast<float, T>{images, input_.template data<T>()});
      }
    });
  }

  DevicePass device_pass(const model::Pass& pass, int n) {
    DevicePass p{.training = pass.training,
                 .seed = pass.seed,
                 .step = step_.data(),
                 .samples = nullptr,
                 .reducer = pass.reducer};
    if (pass.training) set_step(pass.step);
    if (needs_samples_ && pass.training && !pass.samples.empty()) {
      CONFLUX_CHECK(pass.samples.size() == static_cast<std::size_t>(n),
                    "device model: {} sample indices for a batch of {}", pass.samples.size(), n);
      ensure(samples_, pass.samples.size());
      ex_->upload(samples_.data(), pass.samples.data(), pass.samples.size());
      p.samples = samples_.data();
    }
    return p;
  }

  // The memory plan of backward: an output gradient goes back to spare_ once its layer's
  // backward has read it, and an input gradient about to be written takes the smallest spare
  // buffer that holds it, so a pass keeps only the gradients still to be read (plus spares)
  // instead of one per layer, and after the first pass allocates nothing. Every kernel runs
  // on one stream (the executor's), so a buffer handed on is written only after its last read.
  void release(Tensor& gradient) {
    if (gradient.storage.size() == 0) return;
    spare_.push_back(std::move(gradient.storage));
    gradient.storage = {};
  }
  void provide(Tensor& gradient, std::size_t bytes) {
    if (gradient.storage.size() >= bytes) return;
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it) {
      if (it->size() >= bytes && (best == spare_.end() || it->size() < best->size())) best = it;
    }
    if (best == spare_.end()) return;  // the layer allocates, once
    std::swap(gradient.storage, *best);
    if (best->size() == 0) spare_.erase(best);
  }

  void zero_loss_totals() {
    ex_->zero(loss_total_.data(), 1);
    ex_->zero(loss_counts_.data(), 3);
    loss_totals_zeroed_ = true;
  }

  void sum_of_squares_enqueue() {
    const std::size_t parts =
        std::max<std::size_t>(1, std::min<std::size_t>(4096, num_params_ / 256));
    ensure(partials_, parts);
    ensure(norm_, 1);
    ex_->for_each(parts,
                  kernels::SquarePartials{grads_.data(), partials_.data(), num_params_, parts});
    ex_->for_each(1, kernels::SumPartials{partials_.data(), norm_.data(), 1, parts});
  }

  Ex* ex_;
  DType activations_;
  model::GraphPlan plan_;
  model::SampleShape input_shape_;
  int classes_;
  std::size_t num_params_;
  Buffer<float> state_;  // parameters, then buffers
  Buffer<float> grads_;
  std::vector<std::unique_ptr<DeviceLayer<Ex>>> layers_;
  model::GraphWalk<Tensor> walk_;
  Tensor input_;                          // the batch, channels-last
  std::vector<Buffer<std::byte>> spare_;  // backward's gradient buffers not in use (provide())
  Buffer<float> pixel_factors_;     // set_pixel_normalisation(): scale, then shift, per channel
  std::size_t pixel_channels_ = 0;  // 0 until set_pixel_normalisation()
  Tensor grad_logits_;
  DevicePass pass_;
  bool needs_samples_ = false;
  Buffer<std::uint32_t> samples_;  // forward()'s sample indices, uploaded from model::Pass
  Buffer<std::uint64_t> step_;     // set_step(): the step dropout masks are drawn for
  Buffer<float> logits_f32_;       // bf16 activations: the logits and their gradient in fp32
  Buffer<double> losses_;
  Buffer<std::int32_t> status_;
  Buffer<double> loss_total_;         // accumulate_loss(): the loss sum since take_losses()
  Buffer<std::int64_t> loss_counts_;  // correct, skipped, 1 + first out-of-range sample
  bool loss_totals_zeroed_ = false;   // the totals exist and hold a sum since take_losses()
  Buffer<double> partials_;
  Buffer<double> norm_;
  std::vector<double> host_losses_;
  std::vector<std::int32_t> host_status_;
  int loss_n_ = 0;
};

}  // namespace conflux::gpu
