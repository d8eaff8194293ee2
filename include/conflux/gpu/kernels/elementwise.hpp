#pragma once
/// @file elementwise.hpp
/// The device kernels of the layers that move or combine values without parameters: relu,
/// flatten (channels-last images to the CPU's feature order), add (with the fused ReLU),
/// concat (along the channels) and dropout (masks drawn from the CPU's keyed generator, so
/// the same elements drop on both devices).

#include <cstddef>
#include <cstdint>

#include "conflux/core/rng.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"
#include "conflux/model/dropout.hpp"

namespace conflux::gpu::kernels {

/// y = a + b, then the ReLU when `relu`.
struct AddInto {
  const float* a;
  const float* b;
  float* y;
  bool relu;
  CONFLUX_HD void operator()(std::size_t i) const {
    const float v = a[i] + b[i];
    y[i] = relu && !(v > 0.0f) ? 0.0f : v;
  }
};

/// y = x.
struct Copy {
  const float* x;
  float* y;
  CONFLUX_HD void operator()(std::size_t i) const { y[i] = x[i]; }
};

/// dst[pixel, offset + c] = src[pixel, c] (to_concat) or back (from the concatenation).
struct ChannelBlock {
  const float* src;
  float* dst;
  std::size_t block;   // channels of this input
  std::size_t total;   // channels of the concatenation
  std::size_t offset;  // first channel of this input in it
  bool to_concat;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t c = i % block, pixel = i / block;
    if (to_concat) {
      dst[pixel * total + offset + c] = src[i];
    } else {
      dst[i] = src[pixel * total + offset + c];
    }
  }
};

/// Row r's dropout mask, drawn as model::Dropout draws it: `width` uniforms from Rng{seed,
/// "drop", salt, step, sample} in the CPU's (channels-first) element order, stored at each
/// element's channels-last position.
struct DropoutMask {
  std::uint64_t seed, salt, step;
  const std::uint32_t* samples;  // null: the row number
  float rate, scale;
  std::size_t width, channels, pixels;
  float* mask;
  CONFLUX_HD void operator()(std::size_t r) const {
    const std::uint64_t sample = samples != nullptr ? samples[r] : r;
    const std::uint64_t key[] = {seed, model::kDropoutStream, salt, step, sample};
    Rng rng(key, 5);
    float* row = mask + r * width;
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t c = j / pixels, p = j % pixels;
      row[p * channels + c] = rng.uniform() < rate ? 0.0f : scale;
    }
  }
};

/// y = x * mask.
struct Multiply {
  const float* x;
  const float* mask;
  float* y;
  CONFLUX_HD void operator()(std::size_t i) const { y[i] = x[i] * mask[i]; }
};

template <class Ex>
class ReluKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit ReluKernel(const DeviceLayerSpec& /*s*/) {}
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    out.resize(in[0]->shape);
    ex.for_each(out.size(), ReluForward{in[0]->data(), out.data()});
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    if (grad_in[0] == nullptr) return;
    grad_in[0]->resize(in[0]->shape);
    ex.for_each(grad_out.size(), ReluGate{in[0]->data(), grad_out.data(), grad_in[0]->data()});
  }
};

template <class Ex>
class FlattenKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit FlattenKernel(const DeviceLayerSpec& s) : input_(s.inputs.at(0)) {}

  // A channels-last image becomes the CPU's [C*H*W] feature order, so that the linear layer
  // after it has the CPU's weights.
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize({x.batch(), static_cast<int>(x.size() / std::max(1, x.batch()))});
    if (input_.size() == 3) {
      ex.for_each(out.size(), ToChannelsFirst{x.data(), out.data(), dim(0), dim(1), dim(2)});
    } else {
      ex.for_each(out.size(), Copy{x.data(), out.data()});
    }
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    if (grad_in[0] == nullptr) return;
    grad_in[0]->resize(in[0]->shape);
    if (input_.size() == 3) {
      ex.for_each(grad_out.size(),
                  ToChannelsLast{grad_out.data(), grad_in[0]->data(), dim(0), dim(1), dim(2)});
    } else {
      ex.for_each(grad_out.size(), Copy{grad_out.data(), grad_in[0]->data()});
    }
  }

 private:
  std::size_t dim(std::size_t d) const { return static_cast<std::size_t>(input_[d]); }
  model::SampleShape input_;
};

template <class Ex>
class AddKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit AddKernel(const DeviceLayerSpec& /*s*/) {}
  bool fuse_relu() noexcept override { return relu_ = true; }

  // ((x0 + x1) + x2) + ...: the CPU's order; the ReLU with the last addition.
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    out.resize(in[0]->shape);
    const float* a = in[0]->data();
    for (std::size_t k = 1; k < in.size(); ++k) {
      ex.for_each(out.size(), AddInto{a, in[k]->data(), out.data(), relu_ && k + 1 == in.size()});
      a = out.data();
    }
    output_ = &out;
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (grad_in[k] == nullptr) continue;
      grad_in[k]->resize(in[k]->shape);
      if (relu_) {
        ex.for_each(grad_out.size(),
                    ReluGate{output_->data(), grad_out.data(), grad_in[k]->data()});
      } else {
        ex.for_each(grad_out.size(), Copy{grad_out.data(), grad_in[k]->data()});
      }
    }
  }

 private:
  bool relu_ = false;
  const Tensor* output_ = nullptr;
};

template <class Ex>
class ConcatKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit ConcatKernel(const DeviceLayerSpec& s) : output_(s.output) {}

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    std::vector<int> shape = in[0]->shape;
    shape[1] = output_[0];
    out.resize(std::move(shape));
    std::size_t offset = 0;
    for (const Tensor* x : in) {
      const auto block = static_cast<std::size_t>(x->shape[1]);
      ex.for_each(x->size(), ChannelBlock{x->data(), out.data(), block, total(), offset, true});
      offset += block;
    }
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    std::size_t offset = 0;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto block = static_cast<std::size_t>(in[k]->shape[1]);
      if (grad_in[k] != nullptr) {
        grad_in[k]->resize(in[k]->shape);
        ex.for_each(grad_in[k]->size(), ChannelBlock{grad_out.data(), grad_in[k]->data(), block,
                                                     total(), offset, false});
      }
      offset += block;
    }
  }

 private:
  std::size_t total() const { return static_cast<std::size_t>(output_[0]); }
  model::SampleShape output_;
};

template <class Ex>
class DropoutKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit DropoutKernel(const DeviceLayerSpec& s)
      : rate_(s.spec->rate),
        scale_(static_cast<float>(1.0 / (1.0 - s.spec->rate))),
        salt_(s.index),
        layout_(channels_last(s.inputs.at(0))) {}

  void forward(Ex& ex, const DevicePass& pass, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize(x.shape);
    masked_ = pass.training && rate_ > 0.0;
    if (!masked_) {
      ex.for_each(out.size(), Copy{x.data(), out.data()});
      return;
    }
    ensure(mask_, x.size());
    const std::size_t width = layout_.channels * layout_.pixels;
    ex.for_each(static_cast<std::size_t>(x.batch()),
                DropoutMask{pass.seed, salt_, pass.step, pass.samples, static_cast<float>(rate_),
                            scale_, width, layout_.channels, layout_.pixels, mask_.data()});
    ex.for_each(out.size(), Multiply{x.data(), mask_.data(), out.data()});
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    if (grad_in[0] == nullptr) return;
    grad_in[0]->resize(in[0]->shape);
    if (masked_) {
      ex.for_each(grad_out.size(), Multiply{grad_out.data(), mask_.data(), grad_in[0]->data()});
    } else {
      ex.for_each(grad_out.size(), Copy{grad_out.data(), grad_in[0]->data()});
    }
  }

 private:
  double rate_;
  float scale_;
  std::uint64_t salt_;
  ChannelsLast layout_;
  bool masked_ = false;
  typename Ex::template Buffer<float> mask_;
};

}  // namespace conflux::gpu::kernels
