#pragma once
/// @file elementwise.hpp
/// The device kernels of the layers that move or combine values without parameters: relu,
/// flatten (channels-last images to the CPU's feature order), add (with the fused ReLU),
/// concat (along the channels) and dropout (masks drawn from the CPU's keyed generator, so
/// the same elements drop on both devices).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "conflux/core/rng.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"
#include "conflux/model/dropout.hpp"

namespace conflux::gpu::kernels {

/// y = a + b, then the ReLU when `relu`.
template <class T>
struct AddInto {
  const T* a;
  const T* b;
  T* y;
  bool relu;
  CONFLUX_HD void operator()(std::size_t i) const {
    const float v = load(a, i) + load(b, i);
    store(y, i, relu ? model::relu_value(v) : v);
  }
};

/// y = x.
template <class T>
struct Copy {
  const T* x;
  T* y;
  CONFLUX_HD void operator()(std::size_t i) const { y[i] = x[i]; }
};

/// dst[pixel, offset + c] = src[pixel, c] (to_concat) or back (from the concatenation).
template <class T>
struct ChannelBlock {
  const T* src;
  T* dst;
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
  std::uint64_t seed, salt;
  // Device memory, read when the kernel runs: a captured step graph replays with the step
  // number set_step() wrote, not the one of the capture.
  const std::uint64_t* step;
  const std::uint32_t* samples;  // null: the row number
  float rate, scale;
  std::size_t width, channels, pixels;
  float* mask;
  CONFLUX_HD void operator()(std::size_t r) const {
    const std::uint64_t sample = samples != nullptr ? samples[r] : r;
    Rng rng = model::dropout_rng(seed, salt, *step, sample);
    float* row = mask + r * width;
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t c = j / pixels, p = j % pixels;
      row[p * channels + c] = model::dropout_factor(rng, rate, scale);
    }
  }
};

/// *to = value: a per-step scalar written by a launch of its own, whose argument is copied at
/// launch (no host buffer to keep alive, no wait).
template <class T>
struct Assign {
  T* to;
  T value;
  CONFLUX_HD void operator()(std::size_t) const { *to = value; }
};

/// y = x * mask.
template <class T>
struct Multiply {
  const T* x;
  const float* mask;
  T* y;
  CONFLUX_HD void operator()(std::size_t i) const { store(y, i, load(x, i) * mask[i]); }
};

template <class Ex>
class ReluKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit ReluKernel(const DeviceLayerSpec& s) : dtype_(s.activations) {}
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    out.resize(in[0]->shape, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(out.size(), ReluForward<T>{in[0]->template data<T>(), out.template data<T>()});
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(grad_out.size(),
                  ReluGate<T>{in[0]->template data<T>(), grad_out.template data<T>(),
                              gx->template data<T>()});
    });
  }

 private:
  DType dtype_;
};

template <class Ex>
class FlattenKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit FlattenKernel(const DeviceLayerSpec& s)
      : input_(s.inputs.at(0)), dtype_(s.activations) {}

  // A channels-last image becomes the CPU's [C*H*W] feature order, so that the linear layer
  // after it has the CPU's weights.
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize({x.batch(), static_cast<int>(x.size() / std::max(1, x.batch()))}, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      if (input_.size() == 3) {
        ex.for_each(out.size(), ToChannelsFirst<T>{x.template data<T>(), out.template data<T>(),
                                                   dim(0), dim(1), dim(2)});
      } else {
        ex.for_each(out.size(), Copy<T>{x.template data<T>(), out.template data<T>()});
      }
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = grad_out.template data<T>();
      T* dx = gx->template data<T>();
      if (input_.size() == 3) {
        ex.for_each(grad_out.size(), ToChannelsLast<T, T>{dy, dx, dim(0), dim(1), dim(2)});
      } else {
        ex.for_each(grad_out.size(), Copy<T>{dy, dx});
      }
    });
  }

 private:
  std::size_t dim(std::size_t d) const { return static_cast<std::size_t>(input_[d]); }
  model::SampleShape input_;
  DType dtype_;
};

template <class Ex>
class AddKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit AddKernel(const DeviceLayerSpec& s) : dtype_(s.activations) {}
  bool fuse_relu() noexcept override { return relu_ = true; }

  // ((x0 + x1) + x2) + ...: the CPU's order; the ReLU with the last addition.
  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    out.resize(in[0]->shape, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* a = in[0]->template data<T>();
      for (std::size_t k = 1; k < in.size(); ++k) {
        ex.for_each(out.size(), AddInto<T>{a, in[k]->template data<T>(), out.template data<T>(),
                                           relu_ && k + 1 == in.size()});
        a = out.template data<T>();
      }
    });
    output_ = &out;
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = grad_out.template data<T>();
      for (std::size_t k = 0; k < in.size(); ++k) {
        Tensor* gx = this->input_grad(in, grad_in, k, dtype_);
        if (gx == nullptr) continue;
        T* dx = gx->template data<T>();
        if (relu_) {
          ex.for_each(grad_out.size(), ReluGate<T>{output_->template data<T>(), dy, dx});
        } else {
          ex.for_each(grad_out.size(), Copy<T>{dy, dx});
        }
      }
    });
  }

 private:
  DType dtype_;
  bool relu_ = false;
  const Tensor* output_ = nullptr;
};

template <class Ex>
class ConcatKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit ConcatKernel(const DeviceLayerSpec& s) : output_(s.output), dtype_(s.activations) {}

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    std::vector<int> shape = in[0]->shape;
    shape[1] = output_[0];
    out.resize(std::move(shape), dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      std::size_t offset = 0;
      for (const Tensor* x : in) {
        const auto block = static_cast<std::size_t>(x->shape[1]);
        ex.for_each(x->size(), ChannelBlock<T>{x->template data<T>(), out.template data<T>(), block,
                                               total(), offset, true});
        offset += block;
      }
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      std::size_t offset = 0;
      for (std::size_t k = 0; k < in.size(); ++k) {
        const auto block = static_cast<std::size_t>(in[k]->shape[1]);
        if (Tensor* gx = this->input_grad(in, grad_in, k, dtype_)) {
          ex.for_each(gx->size(),
                      ChannelBlock<T>{grad_out.template data<T>(), gx->template data<T>(), block,
                                      total(), offset, false});
        }
        offset += block;
      }
    });
  }

 private:
  std::size_t total() const { return static_cast<std::size_t>(output_[0]); }
  model::SampleShape output_;
  DType dtype_;
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
        layout_(channels_last(s.inputs.at(0))),
        dtype_(s.activations) {}

  void forward(Ex& ex, const DevicePass& pass, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize(x.shape, dtype_);
    masked_ = pass.training && rate_ > 0.0;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      if (!masked_) {
        ex.for_each(out.size(), Copy<T>{x.template data<T>(), out.template data<T>()});
        return;
      }
      ensure(mask_, x.size());
      const std::size_t width = layout_.channels * layout_.pixels;
      ex.for_each(static_cast<std::size_t>(x.batch()),
                  DropoutMask{pass.seed, salt_, pass.step, pass.samples, static_cast<float>(rate_),
                              scale_, width, layout_.channels, layout_.pixels, mask_.data()});
      ex.for_each(out.size(),
                  Multiply<T>{x.template data<T>(), mask_.data(), out.template data<T>()});
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = grad_out.template data<T>();
      T* dx = gx->template data<T>();
      if (masked_) {
        ex.for_each(grad_out.size(), Multiply<T>{dy, mask_.data(), dx});
      } else {
        ex.for_each(grad_out.size(), Copy<T>{dy, dx});
      }
    });
  }

 private:
  double rate_;
  float scale_;
  std::uint64_t salt_;
  ChannelsLast layout_;
  DType dtype_;
  bool masked_ = false;
  typename Ex::template Buffer<float> mask_;
};

}  // namespace conflux::gpu::kernels
