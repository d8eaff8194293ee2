#include "conflux/model/linear.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {

Linear::Linear(int out_features) : out_(out_features) {
  CONFLUX_REQUIRE(out_features > 0, "linear: out must be > 0, got {}", out_features);
}

SampleShape Linear::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(input.size() == 1, "expects a feature vector but gets [{}]; add a flatten layer",
                  fmt::join(input, ","));
  CONFLUX_REQUIRE(input[0] > 0, "expects a non-empty feature vector but gets [{}]", input[0]);
  return {out_};
}

std::vector<ParamInfo> Linear::param_layout(const SampleShape& input) const {
  output_shape(input);  // validates
  return {{.name = "weight", .shape = {out_, input[0]}}, {.name = "bias", .shape = {out_}}};
}

void Linear::bind(std::span<float> params, std::span<float> grads) {
  // The layout is weight {out, in} then bias {out}, so the input width follows from the size.
  CONFLUX_CHECK(
      params.size() == grads.size() && params.size() % out_ == 0 && params.size() / out_ >= 2,
      "linear: bad parameter binding of {} floats for {} outputs", params.size(), out_);
  in_ = static_cast<int>(params.size() / out_) - 1;
  const std::size_t w = static_cast<std::size_t>(out_) * in_;
  weight_ = params.first(w);
  bias_ = params.subspan(w);
  weight_grad_ = grads.first(w);
  bias_grad_ = grads.subspan(w);
}

void Linear::init_params(Rng& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_));
  for (float& w : weight_) w = rng.uniform(-bound, bound);
  for (float& b : bias_) b = rng.uniform(-bound, bound);
}

void Linear::forward(const Tensor& in, Tensor& out) {
  CONFLUX_CHECK(in.shape.size() == 2 && in.shape[1] == in_, "linear {}->{} got input [{}]", in_,
                out_, fmt::join(in.shape, ","));
  const int n = in.batch();
  out.resize({n, out_});
  relu_.set_output(out);
  float* y = out.data.data();
  // Seed every output row with the bias so that the GEMM adds onto it (beta = 1): one pass
  // over the output instead of two.
  for (int i = 0; i < n; ++i)
    std::copy(bias_.begin(), bias_.end(), y + static_cast<std::size_t>(i) * out_);
  if (n == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_, in_, 1.0f, in.data.data(), in_,
              weight_.data(), in_, 1.0f, y, out_);
  if (relu_.on()) relu_in_place(y, out.size());
}

void Linear::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  const int n = in.batch();
  CONFLUX_CHECK(in.shape.size() == 2 && in.shape[1] == in_ && grad_out.shape.size() == 2 &&
                    grad_out.shape[0] == n && grad_out.shape[1] == out_,
                "linear {}->{}: backward shapes [{}] / [{}] do not match", in_, out_,
                fmt::join(in.shape, ","), fmt::join(grad_out.shape, ","));
  const float* dy = grad_out.data.data();
  if (relu_.on() && n > 0) {
    dy_gated_.resize(grad_out.size());
    relu_gate(relu_.output_for(grad_out, describe()), dy, grad_out.size(), dy_gated_.data());
    dy = dy_gated_.data();
  }
  if (n == 0) {
    // BLAS with an empty inner dimension is not reliably a no-op; an empty batch contributes
    // nothing, so the gradients are plain zeros.
    std::fill(weight_grad_.begin(), weight_grad_.end(), 0.0f);
    std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
  } else {
    // dW = dY^T X   ([out, N] x [N, in])
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_, in_, n, 1.0f, dy, out_,
                in.data.data(), in_, 0.0f, weight_grad_.data(), in_);
    // db = column sums of dY
    std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
    float* db = bias_grad_.data();
    for (int i = 0; i < n; ++i) {
      const float* row = dy + static_cast<std::size_t>(i) * out_;
      for (int o = 0; o < out_; ++o) db[o] += row[o];
    }
  }
  if (!input_grad_needed_) {
    grad_in.resize({0});
    return;
  }
  grad_in.resize(in.shape);
  if (n == 0) return;
  // dX = dY W   ([N, out] x [out, in])
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_, out_, 1.0f, dy, out_,
              weight_.data(), in_, 0.0f, grad_in.data.data(), in_);
}

std::string Linear::describe() const {
  return fmt::format("linear {}->{}", in_, out_);
}

const LayerType& linear_layer_type() {
  static const LayerType type{
      .config = {.type = "linear",
                 .keys = {layer_int_key("out", &LayerSpec::out, 1, 1 << 20, "",
                                        "Output features.")},
                 .doc = "Fully connected layer y = x W^T + b."},
      .make = [](const LayerSpec& spec, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Linear>(spec.out);
      },
      // y = x W^T + b with W stored {out, in}, as in PyTorch.
      .onnx =
          [](const LayerSpec&) {
            return OnnxOp{.op_type = "Gemm", .attributes = {{"transB", std::int64_t{1}}}};
          }};
  return type;
}

}  // namespace conflux::model
