#include "conflux/model/dropout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {

namespace {

void multiply(const std::vector<float>& mask, const Tensor& in, Tensor& out) {
  out.resize(in.shape);
  const float* x = in.data.data();
  const float* k = mask.data();
  float* y = out.data.data();
  const std::size_t count = in.size();
  for (std::size_t i = 0; i < count; ++i) y[i] = x[i] * k[i];
}

}  // namespace

Dropout::Dropout(double rate) : rate_(rate), scale_(static_cast<float>(1.0 / (1.0 - rate))) {
  CONFLUX_REQUIRE(rate >= 0.0 && rate < 1.0, "dropout: rate must be in [0, 1), got {}", rate);
}

std::string Dropout::describe() const {
  return fmt::format("dropout {}", rate_);
}

void Dropout::forward(const Tensor& in, Tensor& out) {
  const Tensor* const inputs[] = {&in};
  forward_pass(Pass{}, inputs, out);
}

void Dropout::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  CONFLUX_CHECK(!masked_, "dropout: one-input backward after a training forward");
  const Tensor* const inputs[] = {&in};
  Tensor* const grads[] = {&grad_in};
  backward_pass(Pass{}, inputs, grad_out, grads);
}

void Dropout::forward_pass(const Pass& pass, Inputs in, Tensor& out) {
  CONFLUX_CHECK(in.size() == 1, "dropout: forward with {} inputs", in.size());
  const Tensor& x = *in[0];
  masked_ = pass.training && rate_ > 0.0;
  if (!masked_) {
    out = x;
    return;
  }
  const std::size_t rows = x.batch();
  CONFLUX_CHECK(pass.samples.empty() || pass.samples.size() == rows,
                "dropout: {} sample indices for a batch of {}", pass.samples.size(), rows);
  const std::size_t width = x.per_sample();
  // Compare 24-bit uniforms with the rate rounded to float: P(drop) = rate to within 2^-24.
  const float rate = static_cast<float>(rate_);
  mask_.resize(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t sample = pass.samples.empty() ? r : pass.samples[r];
    Rng rng = dropout_rng(pass.seed, salt_, pass.step, sample);
    float* k = mask_.data() + r * width;
    for (std::size_t i = 0; i < width; ++i) k[i] = dropout_factor(rng, rate, scale_);
  }
  multiply(mask_, x, out);
}

void Dropout::backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                            InputGrads grad_in) {
  CONFLUX_CHECK(in.size() == 1 && grad_in.size() == 1, "dropout: backward with {} inputs",
                in.size());
  CONFLUX_CHECK(grad_out.shape == in[0]->shape,
                "dropout: backward gradient [{}] does not match the input [{}]",
                fmt::join(grad_out.shape, ","), fmt::join(in[0]->shape, ","));
  CONFLUX_CHECK((pass.training && rate_ > 0.0) == masked_,
                "dropout: backward pass of another mode than the forward pass");
  if (grad_in[0] == nullptr) return;
  if (!masked_) {
    *grad_in[0] = grad_out;
    return;
  }
  CONFLUX_CHECK(mask_.size() == grad_out.size(),
                "dropout: backward does not match the last forward");
  multiply(mask_, grad_out, *grad_in[0]);
}

const LayerType& dropout_layer_type() {
  static const LayerType type{
      .config = {.type = "dropout",
                 .keys = {layer_real_key("rate", &LayerSpec::rate, 0, 0.999999, false,
                                         "Probability of zeroing an element.")},
                 .doc = "Inverted dropout in training (kept elements scaled by 1 / (1 - rate)), "
                        "identity in evaluation; the mask is drawn from (run.seed, layer, step, "
                        "sample)."},
      .make = [](const LayerSpec& spec, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Dropout>(spec.rate);
      },
      // Dropout is the identity in inference.
      .onnx = [](const LayerSpec&) { return OnnxOp{.op_type = "Identity", .attributes = {}}; }};
  return type;
}

}  // namespace conflux::model
