#pragma once
/// @file batchnorm.hpp
/// batchnorm's device kernels, with model::BatchNorm's arithmetic: per-channel sums in double
/// (deterministic two-level sums, channels-last), the statistics of the global batch when the
/// pass has a reducer (the sums travel through the host to it: 2C + 1 doubles per layer and
/// step), running statistics updated in double, one element-wise map per pass, the fused ReLU.

#include <cmath>
#include <cstddef>
#include <vector>

#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"
#include "conflux/model/batchnorm.hpp"

namespace conflux::gpu::kernels {

/// sums[i] = value (the element count after the per-channel sums).
struct SetDouble {
  double* target;
  double value;
  CONFLUX_HD void operator()(std::size_t /*i*/) const { *target = value; }
};

/// Per channel, from sums = [sum x (C), sum x^2 (C), count]: the batch mean and 1 / std, the
/// running statistics (count >= 2), and a = weight * invstd; as BatchNorm::batch_statistics.
struct BatchStatistics {
  const double* sums;
  std::size_t channels;
  double momentum, eps;
  const float* weight;
  float *mean, *invstd, *coef_a, *running_mean, *running_var;
  CONFLUX_HD void operator()(std::size_t c) const {
    model::batchnorm_statistics(sums[c], sums[channels + c], sums[2 * channels], momentum, eps,
                                mean[c], invstd[c], running_mean[c], running_var[c]);
    coef_a[c] = weight[c] * invstd[c];
  }
};

/// Per channel, evaluation: the running statistics as mean and 1 / std.
struct RunningStatistics {
  const float *running_mean, *running_var, *weight;
  double eps;
  float *mean, *invstd, *coef_a;
  CONFLUX_HD void operator()(std::size_t c) const {
    mean[c] = running_mean[c];
    invstd[c] = model::batchnorm_invstd(static_cast<double>(running_var[c]), eps);
    coef_a[c] = weight[c] * invstd[c];
  }
};

/// out = (x - m[c]) * p[c] + q[c] (+ dy * r[c] when dy is set), then the ReLU when `relu`.
template <class T>
struct ChannelMap {
  const T *x, *dy;
  const float *m, *p, *q, *r;
  T* out;
  std::size_t channels;
  bool relu;
  const T* gate;  // null: dy as it is; else dy gated as ReluGate would (a fused ReLU)
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t c = i % channels;
    float v = (load(x, i) - m[c]) * p[c] + q[c];
    if (dy != nullptr) {
      const float g = gate != nullptr ? model::relu_gated(load(gate, i), load(dy, i)) : load(dy, i);
      v += g * r[c];
    }
    store(out, i, relu ? model::relu_value(v) : v);
  }
};

/// Per channel, backward: from the local sums [sum dy (C), sum dy x (C)] the parameter
/// gradients, and sums[C + c] becomes sum(dy * xhat) (what the trainers then add up).
struct BatchNormGradients {
  double* sums;
  std::size_t channels;
  const float *mean, *invstd;
  float *weight_grad, *bias_grad;
  CONFLUX_HD void operator()(std::size_t c) const {
    const double dy_xhat =
        model::batchnorm_dy_xhat(mean[c], invstd[c], sums[c], sums[channels + c]);
    sums[channels + c] = dy_xhat;
    bias_grad[c] = static_cast<float>(sums[c]);
    weight_grad[c] = static_cast<float>(dy_xhat);
  }
};

/// Per channel: dx = dy * a + (x - mean) * b + c, as BatchNorm::run_backward.
struct InputGradientCoefficients {
  const double* sums;  // [sum dy, sum dy * xhat] over the batch the statistics came from
  const double* count;
  std::size_t channels;
  bool through_stats;
  const float *weight, *invstd;
  float *a, *b, *c;
  CONFLUX_HD void operator()(std::size_t ch) const {
    const model::BatchNormInputGrad g =
        model::batchnorm_input_grad(weight[ch], invstd[ch], sums[ch], sums[channels + ch], *count,
                                    through_stats && *count > 0.0);
    a[ch] = g.a;
    b[ch] = g.b;
    c[ch] = g.c;
  }
};

template <class Ex>
class BatchNormKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit BatchNormKernel(const DeviceLayerSpec& s)
      : layout_(channels_last(s.inputs.at(0))),
        momentum_(s.spec->momentum),
        eps_(s.spec->eps),
        dtype_(s.activations) {}

  bool fuse_relu() noexcept override { return relu_ = true; }

  void bind(const DeviceBinding& b) override {
    const std::size_t c = layout_.channels;
    weight_ = b.params;
    bias_ = b.params + c;
    weight_grad_ = b.grads;
    bias_grad_ = b.grads + c;
    running_mean_ = b.buffers;
    running_var_ = b.buffers + c;
  }

  void forward(Ex& ex, const DevicePass& pass, Inputs in, Tensor& out) override {
    with_element(dtype_, [&](auto zero) { forward_as<decltype(zero)>(ex, pass, *in[0], out); });
  }

  void backward(Ex& ex, const DevicePass& pass, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    with_element(dtype_, [&](auto zero) {
      backward_as<decltype(zero)>(ex, pass, *in[0], grad_out, grad_in[0]);
    });
  }

 private:
  template <class T>
  void forward_as(Ex& ex, const DevicePass& pass, const Tensor& x, Tensor& out) {
    const std::size_t c = layout_.channels;
    trained_ = pass.training;
    ensure(coefs_, 6 * c);  // mean, invstd, a (forward), then a, b, c (backward)
    ensure(stats_, 2 * c + 1);
    const T* xs = x.template data<T>();
    if (pass.training) {
      const std::size_t rows = static_cast<std::size_t>(x.batch()) * layout_.pixels;
      channel_sums(ex, xs, xs, rows, c, stats_.data(), partials_);
      ex.for_each(1, SetDouble{stats_.data() + 2 * c, static_cast<double>(rows)});
      sum_over_trainers(ex, pass, stats_, 2 * c + 1);
      ex.for_each(c, BatchStatistics{stats_.data(), c, momentum_, eps_, weight_, mean(), invstd(),
                                     coef(2), running_mean_, running_var_});
    } else {
      ex.for_each(c, RunningStatistics{running_mean_, running_var_, weight_, eps_, mean(), invstd(),
                                       coef(2)});
    }
    out.resize(x.shape, dtype_);
    ex.for_each(out.size(), ChannelMap<T>{xs, nullptr, mean(), coef(2), bias_, nullptr,
                                          out.template data<T>(), c, relu_, nullptr});
    output_ = &out;
  }

  template <class T>
  void backward_as(Ex& ex, const DevicePass& pass, const Tensor& x, const Tensor& grad_out,
                   Tensor* grad_in) {
    const std::size_t c = layout_.channels;
    const T* dy = grad_out.template data<T>();
    // A fused ReLU gates dy where it is read, by the forward's output: no gated copy.
    const T* gate = relu_ ? output_->template data<T>() : nullptr;
    ensure(grad_sums_, 2 * c);
    const std::size_t rows = static_cast<std::size_t>(x.batch()) * layout_.pixels;
    const T* xs = x.template data<T>();
    channel_sums(ex, dy, xs, rows, c, grad_sums_.data(), partials_, gate);
    ex.for_each(
        c, BatchNormGradients{grad_sums_.data(), c, mean(), invstd(), weight_grad_, bias_grad_});
    if (grad_in == nullptr) return;
    // With batch statistics dx also flows through the mean and the variance of the global
    // batch, whose sums the trainers add up.
    if (trained_) sum_over_trainers(ex, pass, grad_sums_, 2 * c);
    ex.for_each(c, InputGradientCoefficients{grad_sums_.data(), stats_.data() + 2 * c, c, trained_,
                                             weight_, invstd(), coef(3), coef(4), coef(5)});
    grad_in->resize(x.shape, dtype_);
    ex.for_each(grad_in->size(), ChannelMap<T>{xs, dy, mean(), coef(4), coef(5), coef(3),
                                               grad_in->template data<T>(), c, false, gate});
  }

  float* coef(std::size_t k) noexcept { return coefs_.data() + k * layout_.channels; }
  float* mean() noexcept { return coef(0); }
  float* invstd() noexcept { return coef(1); }

  // Sums the first `count` doubles of `buffer` over the trainers: on the device when the pass
  // can, else through the host; nothing for one trainer (neither set).
  void sum_over_trainers(Ex& ex, const DevicePass& pass,
                         typename Ex::template Buffer<double>& buffer, std::size_t count) {
    if (pass.device_sum != nullptr) {
      pass.device_sum->sum(buffer.data(), count);
    } else if (pass.reducer != nullptr) {
      reduce_through_host(ex, *pass.reducer, buffer, count);
    }
  }
  void reduce_through_host(Ex& ex, model::StatReducer& reducer,
                           typename Ex::template Buffer<double>& buffer, std::size_t count) {
    host_.resize(count);
    ex.download(host_.data(), buffer.data(), count);
    ex.synchronize();
    reducer.sum(host_);
    ex.upload(buffer.data(), host_.data(), count);
    ex.synchronize();  // host_ may change before an asynchronous upload would have read it
  }
  ChannelsLast layout_;
  double momentum_, eps_;
  DType dtype_;
  bool relu_ = false;
  bool trained_ = false;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  float* weight_grad_ = nullptr;
  float* bias_grad_ = nullptr;
  float* running_mean_ = nullptr;
  float* running_var_ = nullptr;
  const Tensor* output_ = nullptr;
  typename Ex::template Buffer<float> coefs_;
  typename Ex::template Buffer<double> stats_;      // sum x, sum x^2, count
  typename Ex::template Buffer<double> grad_sums_;  // sum dy, sum dy * x (then * xhat)
  typename Ex::template Buffer<double> partials_;
  std::vector<double> host_;
};

}  // namespace conflux::gpu::kernels
