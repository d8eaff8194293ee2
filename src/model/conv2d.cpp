#include "conflux/model/conv2d.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"
#include "conflux/model/relu.hpp"
#include "onednn_conv.hpp"

namespace conflux::model {
namespace {

// Sum with 8 independent partial sums. Without -ffast-math the compiler must keep a plain
// loop's single serial chain of adds (one per add latency); the lanes make it vectorisable
// while staying deterministic.
float sum(const float* x, int n) {
  float lanes[8] = {};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += x[j + l];
  float total = 0.0f;
  for (; j < n; ++j) total += x[j];
  for (float lane : lanes) total += lane;
  return total;
}

// Sample i of a batch [N, C, H, W].
std::span<const float> sample(const Tensor& in, const ConvGeometry& g, int i) {
  return std::span<const float>(in.data).subspan(i * g.image_size(), g.image_size());
}

}  // namespace

Conv2d::Conv2d(int out_channels, int kernel, int stride, int padding, const LayerOptions& options)
    : out_(out_channels), kernel_(kernel), stride_(stride), padding_(padding) {
  CONFLUX_REQUIRE(out_channels > 0, "conv2d: out must be > 0, got {}", out_channels);
  CONFLUX_REQUIRE(kernel >= 1, "conv2d: kernel must be >= 1, got {}", kernel);
  CONFLUX_REQUIRE(stride >= 1, "conv2d: stride must be >= 1, got {}", stride);
  CONFLUX_REQUIRE(padding >= 0, "conv2d: padding must be >= 0, got {}", padding);
  if (options.conv == ConvKernels::kOnednn)
    onednn_ = std::make_unique<OnednnConv>(options.threads, options.workspace);
}

Conv2d::~Conv2d() = default;

SampleShape Conv2d::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(input.size() == 3, "expects an image [C,H,W] but gets [{}]",
                  fmt::join(input, ","));
  CONFLUX_REQUIRE(input[0] > 0 && input[1] > 0 && input[2] > 0,
                  "expects a non-empty image but gets [{}]", fmt::join(input, ","));
  CONFLUX_REQUIRE(input[1] + 2 * padding_ >= kernel_ && input[2] + 2 * padding_ >= kernel_,
                  "kernel {} with padding {} does not fit the input [{}]", kernel_, padding_,
                  fmt::join(input, ","));
  ConvGeometry g{.channels = input[0],
                 .height = input[1],
                 .width = input[2],
                 .kernel = kernel_,
                 .stride = stride_,
                 .padding = padding_};
  g.compute_output();
  return {out_, g.out_height, g.out_width};
}

std::vector<ParamInfo> Conv2d::param_layout(const SampleShape& input) const {
  output_shape(input);  // validates
  return {{.name = "weight", .shape = {out_, input[0], kernel_, kernel_}},
          {.name = "bias", .shape = {out_}}};
}

void Conv2d::bind(std::span<float> params, std::span<float> grads) {
  // The layout is weight {out, C, k, k} then bias {out}, so C follows from the size.
  const std::size_t per_out = params.size() / out_;
  const std::size_t kk = static_cast<std::size_t>(kernel_) * kernel_;
  CONFLUX_CHECK(params.size() == grads.size() && params.size() % out_ == 0 && per_out > 1 &&
                    (per_out - 1) % kk == 0,
                "conv2d: bad parameter binding of {} floats", params.size());
  in_channels_ = static_cast<int>((per_out - 1) / kk);
  const std::size_t w = params.size() - out_;
  weight_ = params.first(w);
  bias_ = params.subspan(w);
  weight_grad_ = grads.first(w);
  bias_grad_ = grads.subspan(w);
}

void Conv2d::init_params(Rng& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(weight_.size() / out_));  // C*k*k
  for (float& w : weight_) w = rng.uniform(-bound, bound);
  for (float& b : bias_) b = rng.uniform(-bound, bound);
}

ConvGeometry Conv2d::geometry_for(const Tensor& in) const {
  CONFLUX_CHECK(in.shape.size() == 4 && in.shape[1] == in_channels_, "{} got input [{}]",
                describe(), fmt::join(in.shape, ","));
  ConvGeometry g{.channels = in.shape[1],
                 .height = in.shape[2],
                 .width = in.shape[3],
                 .kernel = kernel_,
                 .stride = stride_,
                 .padding = padding_};
  g.compute_output();
  return g;
}

void Conv2d::forward(const Tensor& in, Tensor& out) {
  const ConvGeometry g = geometry_for(in);
  out.resize({in.batch(), out_, g.out_height, g.out_width});
  if (onednn_ && in.batch() > 0) {
    onednn_->forward(onednn_call(in, g), in.data.data(), weight_, bias_, out.data.data());
  } else {
    forward_im2col(in, g, out);
  }
  relu_.set_output(out);
}

void Conv2d::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  const ConvGeometry g = geometry_for(in);
  CONFLUX_CHECK(grad_out.shape == std::vector<int>({in.batch(), out_, g.out_height, g.out_width}),
                "{}: backward gradient [{}] does not match the input [{}]", describe(),
                fmt::join(grad_out.shape, ","), fmt::join(in.shape, ","));
  const float* gate = relu_.on() ? relu_.output_for(grad_out, describe()) : nullptr;
  if (input_grad_needed_) {
    grad_in.resize(in.shape);
  } else {
    grad_in.resize({0});
  }
  if (onednn_ && in.batch() > 0) {
    onednn_->backward(onednn_call(in, g), in.data.data(), gate, grad_out.data.data(), weight_,
                      weight_grad_, bias_grad_, input_grad_needed_ ? grad_in.data.data() : nullptr);
  } else {
    backward_im2col(in, grad_out.data.data(), gate, g, grad_in);
  }
}

OnednnConvCall Conv2d::onednn_call(const Tensor& in, const ConvGeometry& g) const {
  return {.geometry = g, .batch = in.batch(), .out_channels = out_, .relu = relu_.on()};
}

// Both passes unfold one sample at a time into col_, which stays in the caches, and the
// backward pass unfolds it again: keeping the whole batch's patch matrices (k*k times the
// input) meant writing them to memory and reading them back, measured slower than unfolding
// twice with the plane-copy im2col (docs/speed.md), and it held hundreds of MB for a ResNet.
void Conv2d::forward_im2col(const Tensor& in, const ConvGeometry& g, Tensor& out) {
  const int n = in.batch();
  const int rows = static_cast<int>(g.col_rows());  // C*k*k
  const int cols = static_cast<int>(g.col_cols());  // H'*W'
  col_.resize(g.col_rows() * g.col_cols());
  const std::size_t out_size = static_cast<std::size_t>(out_) * cols;
  for (int i = 0; i < n; ++i) {
    im2col(sample(in, g, i), g, col_);
    float* y = out.data.data() + i * out_size;
    // Bias first, then the GEMM accumulates onto it (beta = 1).
    for (int o = 0; o < out_; ++o)
      std::fill_n(y + static_cast<std::size_t>(o) * cols, cols, bias_[o]);
    // Y_i = W [out, C*k*k] x col_i [C*k*k, H'*W']
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, out_, cols, rows, 1.0f, weight_.data(),
                rows, col_.data(), cols, 1.0f, y, cols);
    if (relu_.on()) relu_in_place(y, out_size);
  }
}

// One pass over the samples: each sample's patch matrix and dY_i are used for its
// weight-gradient product and then its input-gradient product while they are in the caches.
// Every product and sum runs in the same order as two separate passes would.
void Conv2d::backward_im2col(const Tensor& in, const float* dy, const float* gate,
                             const ConvGeometry& g, Tensor& grad_in) {
  const int n = in.batch();
  const int rows = static_cast<int>(g.col_rows());
  const int cols = static_cast<int>(g.col_cols());
  const std::size_t out_size = static_cast<std::size_t>(out_) * cols;
  col_.resize(g.col_rows() * g.col_cols());
  if (gate != nullptr) dy_gated_.resize(out_size);
  // Parameter gradients: dW = sum_i dY_i col_i^T, db = sum over batch and pixels of dY.
  std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
  if (n == 0) std::fill(weight_grad_.begin(), weight_grad_.end(), 0.0f);
  for (int i = 0; i < n; ++i) {
    const float* dy_i = dy + i * out_size;
    if (gate != nullptr) {
      relu_gate(gate + i * out_size, dy_i, out_size, dy_gated_.data());
      dy_i = dy_gated_.data();
    }
    im2col(sample(in, g, i), g, col_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, out_, rows, cols, 1.0f, dy_i, cols,
                col_.data(), cols, i == 0 ? 0.0f : 1.0f, weight_grad_.data(), rows);
    for (int o = 0; o < out_; ++o)
      bias_grad_[o] += sum(dy_i + static_cast<std::size_t>(o) * cols, cols);
    if (!input_grad_needed_) continue;
    // dcol_i = W^T [C*k*k, out] x dY_i [out, H'*W'], folded back onto the image. It takes
    // col_i's place (dead once the weight gradient has it): one patch-sized buffer in the
    // caches instead of two.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, cols, out_, 1.0f, weight_.data(),
                rows, dy_i, cols, 0.0f, col_.data(), cols);
    col2im(col_, g, std::span<float>(grad_in.data).subspan(i * g.image_size(), g.image_size()),
           col2im_masks_);
  }
}

std::string Conv2d::describe() const {
  return fmt::format("conv2d {}->{} k{}{} p{}", in_channels_, out_, kernel_,
                     stride_ == 1 ? std::string() : fmt::format(" s{}", stride_), padding_);
}

const LayerType& conv2d_layer_type() {
  // A conv2d layer's defaults are LayerSpec's own.
  const auto default_of = [](int LayerSpec::*member) {
    return fmt::format("{}", LayerSpec{}.*member);
  };
  static const LayerType type{
      .config = {.type = "conv2d",
                 .keys = {layer_int_key("out", &LayerSpec::out, 1, 1 << 20, "", "Output channels."),
                          layer_int_key("kernel", &LayerSpec::kernel, 1, 64,
                                        default_of(&LayerSpec::kernel), "Square kernel size."),
                          layer_int_key("stride", &LayerSpec::stride, 1, 64,
                                        default_of(&LayerSpec::stride), "Stride."),
                          layer_int_key("padding", &LayerSpec::padding, 0, 64,
                                        default_of(&LayerSpec::padding),
                                        "Zero padding on each side.")},
                 .doc = "2-D convolution (im2col + OpenBLAS sgemm)."},
      .make = [](const LayerSpec& spec, const LayerOptions& options) -> std::unique_ptr<Layer> {
        return std::make_unique<Conv2d>(spec.out, spec.kernel, spec.stride, spec.padding, options);
      },
      .onnx =
          [](const LayerSpec& spec) {
            const std::int64_t k = spec.kernel, s = spec.stride, p = spec.padding;
            return OnnxOp{.op_type = "Conv",
                          .attributes = {{"kernel_shape", std::vector<std::int64_t>{k, k}},
                                         {"strides", std::vector<std::int64_t>{s, s}},
                                         {"pads", std::vector<std::int64_t>{p, p, p, p}}}};
          }};
  return type;
}

}  // namespace conflux::model
