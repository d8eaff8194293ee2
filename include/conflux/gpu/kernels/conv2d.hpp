#pragma once
/// @file conv2d.hpp
/// conv2d's device kernels: the executor's convolution (cuDNN on CUDA) on channels-last
/// activations with a KRSC working copy of the weights in the activations' element type (made
/// each forward from the fp32 master), then the bias and, fused, the ReLU; backward gates by
/// the ReLU, sums the bias gradient per channel (double, fixed order), and converts the KRSC
/// weight gradient back to the fp32 master's layout.

#include <cstddef>

#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"

namespace conflux::gpu::kernels {

template <class Ex>
class Conv2dKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit Conv2dKernel(const DeviceLayerSpec& s)
      : channels_(s.inputs.at(0).at(0)),
        height_(s.inputs.at(0).at(1)),
        width_(s.inputs.at(0).at(2)),
        out_(s.spec->out),
        kernel_(s.spec->kernel),
        stride_(s.spec->stride),
        padding_(s.spec->padding),
        dtype_(s.activations) {}

  bool fuse_relu() noexcept override { return relu_ = true; }

  void bind(const DeviceBinding& b) override {
    const std::size_t w = weight_count();
    weight_ = b.params;
    bias_ = b.params + w;
    weight_grad_ = b.grads;
    bias_grad_ = b.grads + w;
  }

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    const ConvShape g = shape_of(x.batch());
    out.resize({g.batch, out_, g.output_height(), g.output_width()}, dtype_);
    ensure(weights_krsc_, weight_count() * size_of(dtype_));
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(weight_count(),
                  WeightsToChannelsLast<T>{weight_, krsc<T>(weights_krsc_),
                                           static_cast<std::size_t>(channels_), kk()});
      if (out.size() == 0) return;
      ex.conv({.kind = ConvCall::Kind::kForward,
               .shape = g,
               .x = x.raw(),
               .w = weights_krsc_.data(),
               .y = nullptr,
               .out = out.raw(),
               .dtype = dtype_});
      ex.for_each(out.size(), AddChannelBias<T>{out.template data<T>(), bias_,
                                                static_cast<std::size_t>(out_), relu_});
    });
    output_ = &out;
  }

  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    const Tensor& x = *in[0];
    const ConvShape g = shape_of(x.batch());
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = grad_out.template data<T>();
      if (relu_ && grad_out.size() > 0) {
        T* gated = reinterpret_cast<T*>(ex.scratch(grad_out.size() * sizeof(T)));
        ex.for_each(grad_out.size(), ReluGate<T>{output_->template data<T>(), dy, gated});
        dy = gated;
      }
      ensure(sums_, static_cast<std::size_t>(out_));
      const std::size_t rows = grad_out.size() / static_cast<std::size_t>(out_);
      channel_sums(ex, dy, static_cast<const T*>(nullptr), rows, static_cast<std::size_t>(out_),
                   sums_.data(), partials_);
      ex.for_each(static_cast<std::size_t>(out_), ToFloat{sums_.data(), bias_grad_});
      if (grad_out.size() == 0) {
        ex.zero(weight_grad_, weight_count());
      } else {
        ensure(weight_grad_krsc_, weight_count() * sizeof(T));
        ex.conv({.kind = ConvCall::Kind::kBackwardFilter,
                 .shape = g,
                 .x = x.raw(),
                 .w = nullptr,
                 .y = dy,
                 .out = weight_grad_krsc_.data(),
                 .dtype = dtype_});
        ex.for_each(weight_count(),
                    WeightsToChannelsFirst<T>{krsc<T>(weight_grad_krsc_), weight_grad_,
                                              static_cast<std::size_t>(channels_), kk()});
      }
      Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
      if (gx == nullptr) return;
      if (gx->size() == 0) return;
      ex.conv({.kind = ConvCall::Kind::kBackwardData,
               .shape = g,
               .x = nullptr,
               .w = weights_krsc_.data(),
               .y = dy,
               .out = gx->raw(),
               .dtype = dtype_});
    });
  }

 private:
  using Bytes = typename Ex::template Buffer<std::byte>;
  template <class T>
  static T* krsc(Bytes& b) {
    return reinterpret_cast<T*>(b.data());
  }
  std::size_t kk() const noexcept { return static_cast<std::size_t>(kernel_) * kernel_; }
  std::size_t weight_count() const noexcept {
    return static_cast<std::size_t>(out_) * channels_ * kk();
  }
  ConvShape shape_of(int batch) const noexcept {
    return {.batch = batch,
            .channels = channels_,
            .height = height_,
            .width = width_,
            .out_channels = out_,
            .kernel = kernel_,
            .stride = stride_,
            .padding = padding_};
  }

  int channels_, height_, width_, out_, kernel_, stride_, padding_;
  DType dtype_;
  bool relu_ = false;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  float* weight_grad_ = nullptr;
  float* bias_grad_ = nullptr;
  const Tensor* output_ = nullptr;  // the last forward's output: the fused ReLU's gate
  Bytes weights_krsc_;              // the forward's weights, for backward too
  Bytes weight_grad_krsc_;
  typename Ex::template Buffer<double> sums_;
  typename Ex::template Buffer<double> partials_;
};

}  // namespace conflux::gpu::kernels
