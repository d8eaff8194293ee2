#include "conflux/model/batchnorm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

namespace {

// A batch viewed as [N, C, S]: S = H * W for images, 1 for feature vectors.
struct Layout {
  int n = 0;
  int c = 0;
  int s = 1;
};

Layout layout_of(const Tensor& in, int channels) {
  CONFLUX_CHECK((in.shape.size() == 2 || in.shape.size() == 4) && in.shape[1] == channels,
                "batchnorm {}: got input [{}]", channels, fmt::join(in.shape, ","));
  Layout l{.n = in.shape[0], .c = channels, .s = 1};
  if (in.shape.size() == 4) l.s = in.shape[2] * in.shape[3];
  return l;
}

// Per channel, in double and in a fixed order: su[c] = sum of u, suv[c] = sum of u * v. The
// inner loops run along positions (the features of [N, F], or H * W with one running sum per
// position, added up at the end), so they vectorise without reassociating a reduction.
void channel_sums(const Layout& l, const float* u, const float* v, double* su, double* suv,
                  std::vector<double>& run_u, std::vector<double>& run_uv) {
  const std::size_t c_count = l.c;
  const std::size_t s_count = l.s;
  std::fill(su, su + c_count, 0.0);
  std::fill(suv, suv + c_count, 0.0);
  if (s_count == 1) {
    for (std::size_t n = 0; n < static_cast<std::size_t>(l.n); ++n) {
      const float* ur = u + n * c_count;
      const float* vr = v + n * c_count;
      for (std::size_t c = 0; c < c_count; ++c) {
        su[c] += ur[c];
        suv[c] += static_cast<double>(ur[c]) * vr[c];
      }
    }
    return;
  }
  run_u.resize(s_count);
  run_uv.resize(s_count);
  double* ru = run_u.data();
  double* ruv = run_uv.data();
  for (std::size_t c = 0; c < c_count; ++c) {
    std::fill(ru, ru + s_count, 0.0);
    std::fill(ruv, ruv + s_count, 0.0);
    for (std::size_t n = 0; n < static_cast<std::size_t>(l.n); ++n) {
      const float* ur = u + (n * c_count + c) * s_count;
      const float* vr = v + (n * c_count + c) * s_count;
      for (std::size_t s = 0; s < s_count; ++s) {
        ru[s] += ur[s];
        ruv[s] += static_cast<double>(ur[s]) * vr[s];
      }
    }
    su[c] = std::accumulate(ru, ru + s_count, 0.0);
    suv[c] = std::accumulate(ruv, ruv + s_count, 0.0);
  }
}

// out = (x - m[c]) * p[c] + q[c] + (dy ? dy * r[c] : 0), the one element-wise map of both
// passes: forward y = xhat * weight + bias, backward dx = weight * invstd * (dy - ...).
struct ChannelMap {
  const float* m;
  const float* p;
  const float* q;
  const float* r;  // unused without dy
};

// `relu` (forward only) applies a fused ReLU to each row right after writing it.
void apply_map(const Layout& l, const ChannelMap& k, const float* __restrict x,
               const float* __restrict dy, float* __restrict out, bool relu = false) {
  const std::size_t c_count = l.c;
  const std::size_t s_count = l.s;
  for (std::size_t n = 0; n < static_cast<std::size_t>(l.n); ++n) {
    if (s_count == 1) {
      const std::size_t row = n * c_count;
      if (dy == nullptr) {
        for (std::size_t c = 0; c < c_count; ++c)
          out[row + c] = (x[row + c] - k.m[c]) * k.p[c] + k.q[c];
        if (relu) relu_in_place(out + row, c_count);
      } else {
        for (std::size_t c = 0; c < c_count; ++c)
          out[row + c] = (x[row + c] - k.m[c]) * k.p[c] + k.q[c] + dy[row + c] * k.r[c];
      }
      continue;
    }
    for (std::size_t c = 0; c < c_count; ++c) {
      const std::size_t base = (n * c_count + c) * s_count;
      const float m = k.m[c], p = k.p[c], q = k.q[c];
      if (dy == nullptr) {
        for (std::size_t s = 0; s < s_count; ++s) out[base + s] = (x[base + s] - m) * p + q;
        if (relu) relu_in_place(out + base, s_count);
      } else {
        const float r = k.r[c];
        for (std::size_t s = 0; s < s_count; ++s)
          out[base + s] = (x[base + s] - m) * p + q + dy[base + s] * r;
      }
    }
  }
}

}  // namespace

BatchNorm::BatchNorm(double momentum, double eps) : momentum_(momentum), eps_(eps) {
  CONFLUX_REQUIRE(momentum >= 0.0 && momentum <= 1.0,
                  "batchnorm: momentum must be in [0, 1], got {}", momentum);
  CONFLUX_REQUIRE(eps > 0.0 && std::isfinite(eps), "batchnorm: eps must be > 0, got {}", eps);
}

std::string BatchNorm::describe() const {
  return fmt::format("batchnorm {} momentum {} eps {}", channels_, momentum_, eps_);
}

SampleShape BatchNorm::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(input.size() == 1 || input.size() == 3,
                  "batchnorm expects [C, H, W] or [F] but gets [{}]", fmt::join(input, ","));
  CONFLUX_REQUIRE(std::all_of(input.begin(), input.end(), [](int d) { return d > 0; }),
                  "batchnorm expects a non-empty input but gets [{}]", fmt::join(input, ","));
  return input;
}

std::vector<ParamInfo> BatchNorm::param_layout(const SampleShape& input) const {
  output_shape(input);  // validates
  return {{.name = "weight", .shape = {input[0]}}, {.name = "bias", .shape = {input[0]}}};
}

std::vector<ParamInfo> BatchNorm::buffer_layout(const SampleShape& input) const {
  output_shape(input);
  return {{.name = "running_mean", .shape = {input[0]}},
          {.name = "running_var", .shape = {input[0]}}};
}

void BatchNorm::bind(std::span<float> params, std::span<float> grads) {
  CONFLUX_CHECK(params.size() == grads.size() && params.size() % 2 == 0 && !params.empty(),
                "batchnorm: bad parameter binding of {} floats", params.size());
  const std::size_t c = params.size() / 2;
  channels_ = static_cast<int>(c);
  weight_ = params.first(c);
  bias_ = params.subspan(c);
  weight_grad_ = grads.first(c);
  bias_grad_ = grads.subspan(c);
}

void BatchNorm::bind_buffers(std::span<float> buffers) {
  CONFLUX_CHECK(buffers.size() % 2 == 0 && !buffers.empty(),
                "batchnorm: bad buffer binding of {} floats", buffers.size());
  running_mean_ = buffers.first(buffers.size() / 2);
  running_var_ = buffers.subspan(buffers.size() / 2);
}

void BatchNorm::init_params(Rng& /*rng*/) {
  std::fill(weight_.begin(), weight_.end(), 1.0f);
  std::fill(bias_.begin(), bias_.end(), 0.0f);
  std::fill(running_mean_.begin(), running_mean_.end(), 0.0f);
  std::fill(running_var_.begin(), running_var_.end(), 1.0f);
}

void BatchNorm::forward(const Tensor& in, Tensor& out) {
  run_forward(false, nullptr, in, out);
}

void BatchNorm::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  // A training forward's gradient needs the pass's reducer: only backward_pass has it.
  CONFLUX_CHECK(!trained_, "batchnorm: one-input backward after a training forward");
  run_backward(nullptr, in, grad_out, input_grad_needed_ ? &grad_in : nullptr);
}

void BatchNorm::forward_pass(const Pass& pass, Inputs in, Tensor& out) {
  CONFLUX_CHECK(in.size() == 1, "batchnorm: forward with {} inputs", in.size());
  run_forward(pass.training, pass.reducer, *in[0], out);
}

void BatchNorm::backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                              InputGrads grad_in) {
  CONFLUX_CHECK(in.size() == 1 && grad_in.size() == 1, "batchnorm: backward with {} inputs",
                in.size());
  CONFLUX_CHECK(pass.training == trained_,
                "batchnorm: backward pass of another mode than the "
                "forward pass");
  run_backward(pass.reducer, *in[0], grad_out, grad_in[0]);
}

void BatchNorm::run_forward(bool training, StatReducer* reducer, const Tensor& in, Tensor& out) {
  const Layout l = layout_of(in, channels_);
  CONFLUX_CHECK(running_mean_.size() == static_cast<std::size_t>(channels_) &&
                    running_var_.size() == running_mean_.size(),
                "batchnorm {}: running statistics of {} channels are bound", channels_,
                running_mean_.size());
  trained_ = training;
  mean_.resize(l.c);
  invstd_.resize(l.c);
  if (training) {
    batch_statistics(reducer, in);
  } else {
    for (int c = 0; c < l.c; ++c) {
      mean_[c] = running_mean_[c];
      invstd_[c] = batchnorm_invstd(static_cast<double>(running_var_[c]), eps_);
    }
  }
  coef_a_.resize(l.c);
  for (int c = 0; c < l.c; ++c) coef_a_[c] = weight_[c] * invstd_[c];
  out.resize(in.shape);
  apply_map(l, {.m = mean_.data(), .p = coef_a_.data(), .q = bias_.data(), .r = nullptr},
            in.data.data(), nullptr, out.data.data(), relu_.on());
  relu_.set_output(out);
}

void BatchNorm::batch_statistics(StatReducer* reducer, const Tensor& in) {
  const Layout l = layout_of(in, channels_);
  const std::size_t c_count = l.c;
  // One vector, so that synchronising the statistics is one reduction: sums, sums of
  // squares, element count.
  sums_.assign(2 * c_count + 1, 0.0);
  channel_sums(l, in.data.data(), in.data.data(), sums_.data(), sums_.data() + c_count, run_u_,
               run_uv_);
  sums_[2 * c_count] = static_cast<double>(l.n) * l.s;
  if (reducer != nullptr) reducer->sum(sums_);
  count_ = sums_[2 * c_count];
  for (std::size_t c = 0; c < c_count; ++c) {
    batchnorm_statistics(sums_[c], sums_[c_count + c], count_, momentum_, eps_, mean_[c],
                         invstd_[c], running_mean_[c], running_var_[c]);
  }
}

void BatchNorm::run_backward(StatReducer* reducer, const Tensor& in, const Tensor& given_grad_out,
                             Tensor* grad_in) {
  const Layout l = layout_of(in, channels_);
  // A fused ReLU gates the gradient first, in one pass as the ReLU layer's backward did
  // (both later passes read it, so gating inside them would do the work twice).
  const Tensor& grad_out = relu_.on() ? gate_relu(given_grad_out) : given_grad_out;
  CONFLUX_CHECK(grad_out.shape == in.shape && mean_.size() == static_cast<std::size_t>(l.c),
                "batchnorm {}: backward gradient [{}] does not match the last forward", channels_,
                fmt::join(grad_out.shape, ","));
  const std::size_t c_count = l.c;
  // Local sums of dy and dy * x; sum(dy * xhat) = invstd * (sum(dy * x) - mean * sum(dy)).
  sums_.assign(2 * c_count, 0.0);
  channel_sums(l, grad_out.data.data(), in.data.data(), sums_.data(), sums_.data() + c_count,
               run_u_, run_uv_);
  for (std::size_t c = 0; c < c_count; ++c) {
    const double dy_xhat = batchnorm_dy_xhat(mean_[c], invstd_[c], sums_[c], sums_[c_count + c]);
    sums_[c_count + c] = dy_xhat;
    bias_grad_[c] = static_cast<float>(sums_[c]);
    weight_grad_[c] = static_cast<float>(dy_xhat);
  }
  if (grad_in == nullptr) return;
  // With batch statistics dx also flows through the mean and variance, over the global batch:
  // dx = weight * invstd * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n).
  const bool through_stats = trained_ && count_ > 0.0;
  if (trained_ && reducer != nullptr) reducer->sum(sums_);
  coef_a_.resize(c_count);
  coef_b_.resize(c_count);
  coef_c_.resize(c_count);
  for (std::size_t c = 0; c < c_count; ++c) {
    const BatchNormInputGrad g = batchnorm_input_grad(weight_[c], invstd_[c], sums_[c],
                                                      sums_[c_count + c], count_, through_stats);
    coef_a_[c] = g.a;
    coef_b_[c] = g.b;
    coef_c_[c] = g.c;
  }
  grad_in->resize(in.shape);
  apply_map(l, {.m = mean_.data(), .p = coef_b_.data(), .q = coef_c_.data(), .r = coef_a_.data()},
            in.data.data(), grad_out.data.data(), grad_in->data.data());
}

const Tensor& BatchNorm::gate_relu(const Tensor& grad_out) {
  const float* gate = relu_.output_for(grad_out, describe());
  dy_gated_.resize(grad_out.shape);
  relu_gate(gate, grad_out.data.data(), grad_out.size(), dy_gated_.data.data());
  return dy_gated_;
}

const LayerType& batchnorm_layer_type() {
  static const LayerType type{
      .config = {.type = "batchnorm",
                 .keys = {layer_real_key("momentum", &LayerSpec::momentum, 0, 1, false,
                                         "Running statistics: running = (1 - momentum) * "
                                         "running + momentum * batch."),
                          layer_real_key("eps", &LayerSpec::eps, 0, 1, true,
                                         "Added to the variance.")},
                 .doc = "Batch normalisation per channel of [C, H, W] (BatchNorm2d) or per "
                        "feature of [F] (BatchNorm1d), with learned scale and shift; training "
                        "uses the statistics of the global batch over all trainers "
                        "(docs/training.md), evaluation the running ones."},
      .make = [](const LayerSpec& spec, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<BatchNorm>(spec.momentum, spec.eps);
      },
      // The inference form, on the running statistics; ONNX's momentum weighs the old value.
      .onnx =
          [](const LayerSpec& spec) {
            return OnnxOp{.op_type = "BatchNormalization",
                          .attributes = {{"epsilon", static_cast<float>(spec.eps)},
                                         {"momentum", static_cast<float>(1.0 - spec.momentum)}}};
          }};
  return type;
}

}  // namespace conflux::model
