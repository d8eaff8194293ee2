#pragma once
/// @file model_engine.hpp
/// The logic of the GPU model, generic over the executor (layer_math.hpp): layer plans, the flat
/// parameter / gradient / momentum buffers, per-layer activations and scratch, forward, loss,
/// backward and SGD. GpuModel runs it on the CUDA executor; tests run it on HostExecutor against
/// model::Model. No CUDA types, no synchronisation beyond Exec::synchronize() before it frees
/// buffers that queued work may still use.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/layer_math.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/maxpool2d.hpp"
#include "conflux/model/model.hpp"

namespace conflux::gpu {

/// The layer types of model::make_layer.
enum class LayerKind { kLinear, kConv2d, kMaxPool, kRelu, kFlatten };

/// One layer as the GPU model runs it.
struct LayerPlan {
  LayerKind kind = LayerKind::kRelu;
  model::SampleShape in_shape;
  model::SampleShape out_shape;
  std::size_t in_size = 0;       ///< floats per sample in
  std::size_t out_size = 0;      ///< floats per sample out
  std::size_t param_offset = 0;  ///< weight, then bias, in the flat parameter buffer
  std::size_t weight_size = 0;
  std::size_t bias_size = 0;
  int out_features = 0;           ///< linear outputs / conv2d output channels
  model::ConvGeometry conv;       ///< conv2d, out_height / out_width filled in
  int pool_kernel = 0;            ///< maxpool window
  int pool_stride = 0;            ///< maxpool effective stride (0 already mapped to the window)
  bool input_grad_needed = true;  ///< false for the first layer with parameters (as on the CPU)

  bool has_params() const noexcept { return weight_size + bias_size > 0; }
};

/// Plans `specs` for inputs of `input_shape` exactly as model::Model lays them out (the Model
/// constructor has validated them); parameter offsets follow the Model's flat layout.
inline std::vector<LayerPlan> plan_layers(const std::vector<LayerSpec>& specs,
                                          const model::SampleShape& input_shape) {
  std::vector<LayerPlan> plans;
  model::SampleShape shape = input_shape;
  std::size_t offset = 0;
  for (const LayerSpec& spec : specs) {
    const std::unique_ptr<model::Layer> layer = model::make_layer(spec);
    LayerPlan p;
    p.in_shape = shape;
    p.out_shape = layer->output_shape(shape);
    p.in_size = model::Tensor::count_of(p.in_shape);
    p.out_size = model::Tensor::count_of(p.out_shape);
    const std::string type = layer->type();
    if (type == "linear") {
      p.kind = LayerKind::kLinear;
      p.out_features = spec.out;
    } else if (type == "conv2d") {
      p.kind = LayerKind::kConv2d;
      p.out_features = spec.out;
      p.conv = model::ConvGeometry{.channels = shape[0],
                                   .height = shape[1],
                                   .width = shape[2],
                                   .kernel = spec.kernel,
                                   .stride = spec.stride,
                                   .padding = spec.padding};
      p.conv.compute_output();
    } else if (type == "maxpool") {
      const auto& pool = dynamic_cast<const model::MaxPool2d&>(*layer);
      // The shared math (layer_math.hpp) has no padding; choose_device refuses it first.
      CONFLUX_REQUIRE(pool.padding() == 0, "the GPU model has no padded maxpool (padding = {})",
                      pool.padding());
      p.kind = LayerKind::kMaxPool;
      p.pool_kernel = spec.kernel;
      p.pool_stride = pool.stride();
    } else if (type == "relu") {
      p.kind = LayerKind::kRelu;
    } else if (type == "flatten") {
      p.kind = LayerKind::kFlatten;
    } else {
      // kGpuLayerTypes (gpu_model.hpp) lists the types above; choose_device checks it first.
      CONFLUX_INPUT_ERROR("the GPU model has no '{}' layer", type);
    }
    const std::vector<model::ParamInfo> params = layer->param_layout(shape);
    if (!params.empty()) {
      CONFLUX_CHECK(params.size() == 2, "GPU model: layer '{}' has {} parameter tensors", type,
                    params.size());
      p.param_offset = offset;
      p.weight_size = model::Tensor::count_of(params[0].shape);
      p.bias_size = model::Tensor::count_of(params[1].shape);
      offset += p.weight_size + p.bias_size;
    }
    shape = p.out_shape;
    plans.push_back(std::move(p));
  }
  // The CPU model skips dL/din of its first layer with parameters; so does the GPU one.
  for (LayerPlan& p : plans) {
    if (p.has_params()) {
      p.input_grad_needed = false;
      break;
    }
  }
  return plans;
}

/// Sums per-sample losses in sample order (as model::softmax_cross_entropy does, so the double
/// sum matches it); InputError for a label out of range, as on the CPU.
inline model::LossResult sum_losses(const double* loss, const std::int32_t* status, int n,
                                    int classes) {
  model::LossResult result;
  for (int i = 0; i < n; ++i) {
    CONFLUX_REQUIRE(status[i] >= 0, "label {} of sample {} is out of range for {} classes",
                    -1 - status[i], i, classes);
    result.loss_sum += loss[i];
    if (status[i] == 2) {
      ++result.skipped;
    } else {
      result.correct += status[i];
    }
  }
  return result;
}

/// The model on executor Exec. Call order per step: forward, loss (or an external dL/dlogits),
/// backward, sgd_step. The input of forward() must stay unchanged until backward() has run.
template <class Exec>
class ModelEngine {
 public:
  template <class T>
  using Buffer = typename Exec::template Buffer<T>;

  /// Plans `specs` like `reference` (built from the same specs), checks that the parameter
  /// layouts agree and uploads the reference's parameters; gradients and momentum start at 0.
  ModelEngine(Exec exec, const std::vector<LayerSpec>& specs, const model::Model& reference)
      : ex_(std::move(exec)), plans_(plan_layers(specs, reference.input_shape())) {
    CONFLUX_CHECK(!plans_.empty() && plans_.back().out_shape.size() == 1,
                  "GPU model: the last layer must give a class vector");
    classes_ = plans_.back().out_shape[0];
    first_trainable_ = plans_.size();
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      if (plans_[i].has_params()) {
        first_trainable_ = i;
        break;
      }
    }
    // Same flat layout as the CPU model: weight then bias per layer, in layer order.
    const std::vector<model::ParamInfo>& infos = reference.param_infos();
    std::size_t next = 0;
    for (const LayerPlan& p : plans_) {
      if (!p.has_params()) continue;
      CONFLUX_CHECK(next + 1 < infos.size() && infos[next].offset == p.param_offset &&
                        infos[next].size == p.weight_size &&
                        infos[next + 1].offset == p.param_offset + p.weight_size &&
                        infos[next + 1].size == p.bias_size,
                    "GPU model: parameter layout differs from the CPU model's at tensor {}", next);
      next += 2;
    }
    num_params_ = reference.params().size();
    CONFLUX_CHECK(next == infos.size(), "GPU model: {} parameter tensors, the CPU model has {}",
                  next, infos.size());
    params_ = Buffer<float>(num_params_);
    grads_ = Buffer<float>(num_params_);
    velocity_ = Buffer<float>(num_params_);
    ex_.upload(params_.data(), reference.params().data(), num_params_);
    ex_.zero(grads_.data(), num_params_);
    ex_.zero(velocity_.data(), num_params_);
    act_.resize(plans_.size());
    dx_.resize(plans_.size());
    col_.resize(plans_.size());
    argmax_.resize(plans_.size());
    outputs_.assign(plans_.size(), nullptr);
    input_grads_.assign(plans_.size(), nullptr);
  }

  Exec& executor() noexcept { return ex_; }
  const std::vector<LayerPlan>& layers() const noexcept { return plans_; }
  int num_classes() const noexcept { return classes_; }
  std::size_t num_params() const noexcept { return num_params_; }
  float* params() noexcept { return params_.data(); }
  const float* params() const noexcept { return params_.data(); }
  float* grads() noexcept { return grads_.data(); }
  const float* grads() const noexcept { return grads_.data(); }
  float* velocity() noexcept { return velocity_.data(); }
  const float* velocity() const noexcept { return velocity_.data(); }
  /// Whether an SGD step has run (model::Sgd::started()).
  bool sgd_started() const noexcept { return sgd_started_; }
  void set_sgd_started(bool started) noexcept { sgd_started_ = started; }
  /// Largest batch the buffers hold now.
  int capacity() const noexcept { return capacity_; }
  /// Batch size of the last forward(), -1 before the first.
  int batch() const noexcept { return n_; }

  /// Grows the batch buffers to hold `max_batch` samples (never shrinks). Synchronises the
  /// executor first when it reallocates.
  void reserve(int max_batch) {
    CONFLUX_CHECK(max_batch >= 0, "GPU model: batch size {} < 0", max_batch);
    if (max_batch <= capacity_) return;
    const auto n = static_cast<std::size_t>(max_batch);
    CONFLUX_CHECK(n * std::max<std::size_t>(classes_, 1) <= INT_MAX,
                  "GPU model: batch {} too large", max_batch);
    ex_.synchronize();
    std::size_t tmp = 0;
    std::size_t dcol = 0;
    std::size_t ones = 0;
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      const LayerPlan& p = plans_[i];
      const bool input_grad = i > first_trainable_ && p.input_grad_needed;
      act_[i] = Buffer<float>(p.kind == LayerKind::kFlatten ? 0 : n * p.out_size);
      dx_[i] = Buffer<float>(input_grad && p.kind != LayerKind::kFlatten ? n * p.in_size : 0);
      if (p.kind == LayerKind::kConv2d) {
        const math::ConvShape s = conv_shape(p, max_batch);
        CONFLUX_CHECK(s.pixels() * n <= INT_MAX && s.rows() <= INT_MAX,
                      "GPU model: batch {} too large for conv2d layer {}", max_batch, i);
        col_[i] = Buffer<float>(s.col_floats());
        tmp = std::max(tmp, s.out_floats());
        if (p.input_grad_needed) dcol = std::max(dcol, s.col_floats());
        ones = std::max(ones, s.pixels() * n);
      }
      if (p.kind == LayerKind::kMaxPool) argmax_[i] = Buffer<std::int32_t>(n * p.out_size);
    }
    tmp_ = Buffer<float>(tmp);
    dcol_ = Buffer<float>(dcol);
    ones_ = Buffer<float>(ones);
    ex_.for_each(ones, math::Fill{ones_.data(), 1.0f});
    grad_logits_ = Buffer<float>(n * classes_);
    sample_loss_ = Buffer<double>(n);
    sample_status_ = Buffer<std::int32_t>(n);
    capacity_ = max_batch;
    n_ = -1;  // the activations of an earlier forward are gone
    loss_ready_ = false;
  }

  /// Forward pass of n samples x ([n, input...], executor memory); returns the logits [n, K],
  /// valid until the next forward() or reserve().
  const float* forward(const float* x, int n) {
    reserve(n);
    input_ = x;
    n_ = n;
    loss_ready_ = false;
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      const LayerPlan& p = plans_[i];
      const float* in = i == 0 ? x : outputs_[i - 1];
      float* out = act_[i].data();
      switch (p.kind) {
        case LayerKind::kLinear:
          math::linear_forward(ex_, in, linear_shape(p, n), weight(p), bias(p), out);
          break;
        case LayerKind::kConv2d:
          math::conv2d_forward(ex_, in, conv_shape(p, n), weight(p), bias(p), col_[i].data(),
                               tmp_.data(), out);
          break;
        case LayerKind::kMaxPool:
          math::maxpool_forward(ex_, in, pool_shape(p, n), out, argmax_[i].data());
          break;
        case LayerKind::kRelu:
          math::relu_forward(ex_, in, static_cast<std::size_t>(n) * p.in_size, out);
          break;
        case LayerKind::kFlatten:
          out = nullptr;  // a view: same values in the same order
          break;
      }
      outputs_[i] = out != nullptr ? out : in;
    }
    return outputs_.back();
  }

  /// Softmax cross-entropy of the last forward's logits against `labels` (n bytes, executor
  /// memory): per-sample losses and status (see sample_loss(), sample_status(), sum_losses())
  /// and dL/dlogits = grad_scale * (softmax - onehot) for backward().
  void loss(const model::Label* labels, float grad_scale) {
    CONFLUX_CHECK(n_ >= 0, "GPU model: loss before forward");
    math::softmax_cross_entropy(ex_, outputs_.back(), labels, n_, classes_, grad_scale,
                                sample_loss_.data(), sample_status_.data(), grad_logits_.data());
    loss_ready_ = true;
  }
  const double* sample_loss() const noexcept { return sample_loss_.data(); }
  const std::int32_t* sample_status() const noexcept { return sample_status_.data(); }
  const float* grad_logits() const noexcept { return grad_logits_.data(); }

  /// Backward pass of the last forward from dL/dlogits: `grad_logits` ([n, K], executor memory)
  /// or, when null, the one loss() computed. Overwrites grads().
  void backward(const float* grad_logits) {
    CONFLUX_CHECK(n_ >= 0, "GPU model: backward before forward");
    if (grad_logits == nullptr) {
      CONFLUX_CHECK(loss_ready_, "GPU model: backward without loss or dL/dlogits");
      grad_logits = grad_logits_.data();
    }
    const int n = n_;
    for (std::size_t i = plans_.size(); i-- > first_trainable_;) {
      const LayerPlan& p = plans_[i];
      const float* in = i == 0 ? input_ : outputs_[i - 1];
      const float* dy = i + 1 == plans_.size() ? grad_logits : input_grads_[i + 1];
      float* dx = p.input_grad_needed ? dx_[i].data() : nullptr;
      switch (p.kind) {
        case LayerKind::kLinear:
          math::linear_backward(ex_, in, dy, linear_shape(p, n), weight(p), weight_grad(p),
                                bias_grad(p), dx);
          break;
        case LayerKind::kConv2d:
          math::conv2d_backward(ex_, dy, conv_shape(p, n), weight(p), col_[i].data(), ones_.data(),
                                tmp_.data(), dx != nullptr ? dcol_.data() : nullptr, weight_grad(p),
                                bias_grad(p), dx);
          break;
        case LayerKind::kMaxPool:
          math::maxpool_backward(ex_, dy, argmax_[i].data(), pool_shape(p, n), dx);
          break;
        case LayerKind::kRelu:
          math::relu_backward(ex_, in, dy, static_cast<std::size_t>(n) * p.in_size, dx);
          break;
        case LayerKind::kFlatten:
          break;
      }
      input_grads_[i] = p.kind == LayerKind::kFlatten ? dy : dx;
    }
  }

  /// One SGD step (model::Sgd semantics) with the momentum buffer velocity().
  void sgd_step(float lr, float momentum, float weight_decay) {
    math::sgd_step(ex_, params_.data(), grads_.data(), velocity_.data(), num_params_, lr, momentum,
                   weight_decay, !sgd_started_);
    sgd_started_ = true;
  }

 private:
  static math::LinearShape linear_shape(const LayerPlan& p, int n) {
    return {.n = n, .in = static_cast<int>(p.in_size), .out = p.out_features};
  }
  static math::ConvShape conv_shape(const LayerPlan& p, int n) {
    return {.n = n, .g = p.conv, .out_channels = p.out_features};
  }
  static math::PoolShape pool_shape(const LayerPlan& p, int n) {
    return {.planes = static_cast<std::size_t>(n) * p.in_shape[0],
            .height = p.in_shape[1],
            .width = p.in_shape[2],
            .kernel = p.pool_kernel,
            .stride = p.pool_stride,
            .out_height = p.out_shape[1],
            .out_width = p.out_shape[2]};
  }
  const float* weight(const LayerPlan& p) const { return params_.data() + p.param_offset; }
  const float* bias(const LayerPlan& p) const { return weight(p) + p.weight_size; }
  float* weight_grad(const LayerPlan& p) { return grads_.data() + p.param_offset; }
  float* bias_grad(const LayerPlan& p) { return weight_grad(p) + p.weight_size; }

  Exec ex_;
  std::vector<LayerPlan> plans_;
  std::size_t first_trainable_ = 0;
  int classes_ = 0;
  std::size_t num_params_ = 0;
  Buffer<float> params_, grads_, velocity_;
  bool sgd_started_ = false;

  int capacity_ = -1;
  int n_ = -1;
  bool loss_ready_ = false;
  const float* input_ = nullptr;
  std::vector<const float*> outputs_;      // outputs_[i] = output of layer i (a view for flatten)
  std::vector<const float*> input_grads_;  // dL/d(input of layer i) of the last backward
  std::vector<Buffer<float>> act_;         // owned outputs (empty for flatten)
  std::vector<Buffer<float>> dx_;          // owned input gradients (where needed)
  std::vector<Buffer<float>> col_;         // conv2d patch matrices of the last forward
  std::vector<Buffer<std::int32_t>> argmax_;  // maxpool window maxima of the last forward
  Buffer<float> tmp_, dcol_, ones_;           // conv2d scratch shared by all layers
  Buffer<float> grad_logits_;
  Buffer<double> sample_loss_;
  Buffer<std::int32_t> sample_status_;
};

}  // namespace conflux::gpu
