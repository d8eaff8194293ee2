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
        walk_(plan_.size()) {
    build_layers(model);
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
    pass_ = device_pass(pass, n);
    Calls calls{*this};
    return walk_.forward(plan_, input_, calls);
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

  /// Backward pass from the last loss()'s gradient; overwrites grads().
  void backward() {
    Calls calls{*this};
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
    void forward(std::size_t i, std::span<const Tensor* const> in, Tensor& out) {
      m.layers_[i]->forward(*m.ex_, m.pass_, in, out);
    }
    void backward(std::size_t i, std::span<const Tensor* const> in, const Tensor& grad_out,
                  std::span<Tensor* const> grad_in) {
      m.layers_[i]->backward(*m.ex_, m.pass_, in, grad_out, grad_in);
    }
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

  void stage_input(const float* images, int n) {
    std::vector<int> shape{n};
    shape.insert(shape.end(), input_shape_.begin(), input_shape_.end());
    input_.resize(std::move(shape), activations_);
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
                 .step = pass.step,
                 .samples = nullptr,
                 .reducer = pass.reducer};
    if (needs_samples_ && pass.training && !pass.samples.empty()) {
      CONFLUX_CHECK(pass.samples.size() == static_cast<std::size_t>(n),
                    "device model: {} sample indices for a batch of {}", pass.samples.size(), n);
      ensure(samples_, pass.samples.size());
      ex_->upload(samples_.data(), pass.samples.data(), pass.samples.size());
      p.samples = samples_.data();
    }
    return p;
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
  Tensor input_;  // the batch, channels-last
  Tensor grad_logits_;
  DevicePass pass_;
  bool needs_samples_ = false;
  Buffer<std::uint32_t> samples_;
  Buffer<float> logits_f32_;  // bf16 activations: the logits and their gradient in fp32
  Buffer<double> losses_;
  Buffer<std::int32_t> status_;
  Buffer<double> partials_;
  Buffer<double> norm_;
  std::vector<double> host_losses_;
  std::vector<std::int32_t> host_status_;
  int loss_n_ = 0;
};

}  // namespace conflux::gpu
