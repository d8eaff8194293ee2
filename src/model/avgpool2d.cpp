#include "conflux/model/avgpool2d.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"
#include "conflux/model/pooling.hpp"

namespace conflux::model {

namespace {

// [N, C, H, W] of a forward input, with the layer's description in the error.
void check_image_batch(const Tensor& in, const std::string& what) {
  CONFLUX_CHECK(in.shape.size() == 4, "{} got input [{}]", what, fmt::join(in.shape, ","));
}

}  // namespace

AvgPool2d::AvgPool2d(int kernel, int stride)
    : kernel_(kernel), stride_(pool_stride(kernel, stride)) {
  CONFLUX_REQUIRE(kernel >= 1, "avgpool: kernel must be >= 1, got {}", kernel);
  CONFLUX_REQUIRE(stride >= 0, "avgpool: stride must be >= 0 (0 = same as kernel), got {}", stride);
}

std::string AvgPool2d::describe() const {
  return fmt::format("avgpool k{} s{}", kernel_, stride_);
}

SampleShape AvgPool2d::output_shape(const SampleShape& input) const {
  return pooled_shape(kernel_, stride_, 0, input);
}

void AvgPool2d::forward(const Tensor& in, Tensor& out) {
  check_image_batch(in, describe());
  const SampleShape o = output_shape({in.shape[1], in.shape[2], in.shape[3]});
  const int h = in.shape[2];
  const int w = in.shape[3];
  out.resize({in.batch(), o[0], o[1], o[2]});
  const std::size_t planes = static_cast<std::size_t>(in.batch()) * o[0];
  const float scale = 1.0f / static_cast<float>(kernel_ * kernel_);
  float* y = out.data.data();
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in.data.data() + p * h * w;
    for (int oh = 0; oh < o[1]; ++oh) {
      for (int ow = 0; ow < o[2]; ++ow) {
        const float* window = x + oh * stride_ * w + ow * stride_;
        float sum = 0.0f;  // row-major window order: the same sum on every machine
        for (int ki = 0; ki < kernel_; ++ki) {
          for (int kj = 0; kj < kernel_; ++kj) sum += window[ki * w + kj];
        }
        *y++ = sum * scale;
      }
    }
  }
}

void AvgPool2d::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  check_image_batch(in, describe());
  const SampleShape o = output_shape({in.shape[1], in.shape[2], in.shape[3]});
  CONFLUX_CHECK(grad_out.shape == (std::vector<int>{in.batch(), o[0], o[1], o[2]}),
                "{}: backward gradient [{}] does not match the last forward", describe(),
                fmt::join(grad_out.shape, ","));
  const int h = in.shape[2];
  const int w = in.shape[3];
  grad_in.resize(in.shape);
  std::fill(grad_in.data.begin(), grad_in.data.end(), 0.0f);
  const std::size_t planes = static_cast<std::size_t>(in.batch()) * o[0];
  const float scale = 1.0f / static_cast<float>(kernel_ * kernel_);
  const float* dy = grad_out.data.data();
  for (std::size_t p = 0; p < planes; ++p) {
    float* dx = grad_in.data.data() + p * h * w;
    for (int oh = 0; oh < o[1]; ++oh) {
      for (int ow = 0; ow < o[2]; ++ow) {
        // '+=': overlapping windows (stride < kernel) share inputs.
        const float g = *dy++ * scale;
        float* window = dx + oh * stride_ * w + ow * stride_;
        for (int ki = 0; ki < kernel_; ++ki) {
          for (int kj = 0; kj < kernel_; ++kj) window[ki * w + kj] += g;
        }
      }
    }
  }
}

SampleShape GlobalAvgPool::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(input.size() == 3 && input[0] > 0 && input[1] > 0 && input[2] > 0,
                  "expects an image [C,H,W] but gets [{}]", fmt::join(input, ","));
  return {input[0]};
}

void GlobalAvgPool::forward(const Tensor& in, Tensor& out) {
  check_image_batch(in, type());
  const std::size_t plane = static_cast<std::size_t>(in.shape[2]) * in.shape[3];
  out.resize({in.batch(), in.shape[1]});
  const float scale = 1.0f / static_cast<float>(plane);
  const float* x = in.data.data();
  for (float& y : out.data) {
    float sum = 0.0f;
    for (std::size_t i = 0; i < plane; ++i) sum += x[i];
    y = sum * scale;
    x += plane;
  }
}

void GlobalAvgPool::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  check_image_batch(in, type());
  CONFLUX_CHECK(grad_out.shape == (std::vector<int>{in.batch(), in.shape[1]}),
                "{}: backward gradient [{}] does not match the last forward", type(),
                fmt::join(grad_out.shape, ","));
  const std::size_t plane = static_cast<std::size_t>(in.shape[2]) * in.shape[3];
  grad_in.resize(in.shape);
  const float scale = 1.0f / static_cast<float>(plane);
  float* dx = grad_in.data.data();
  for (const float g : grad_out.data) {
    std::fill(dx, dx + plane, g * scale);
    dx += plane;
  }
}

const LayerType& avgpool_layer_type() {
  static const LayerType type{
      .config = {.type = "avgpool",
                 .keys = {layer_int_key("kernel", &LayerSpec::kernel, 1, 64, "2", "Window size."),
                          layer_int_key("stride", &LayerSpec::stride, 0, 64, "0",
                                        "Stride; 0 = same as the window.")},
                 .doc = "Average pooling (no padding).",
                 .complete = complete_pool_stride},
      .make = [](const LayerSpec& spec, const LayerOptions&) -> std::unique_ptr<Layer> {
        CONFLUX_REQUIRE(spec.padding == 0, "avgpool: padding is not supported, got {}",
                        spec.padding);
        return std::make_unique<AvgPool2d>(spec.kernel, spec.stride);
      },
      // No padding, floor, like conflux's avgpool.
      .onnx =
          [](const LayerSpec& spec) {
            const std::int64_t k = spec.kernel, s = pool_stride(spec.kernel, spec.stride);
            return OnnxOp{.op_type = "AveragePool",
                          .attributes = {{"kernel_shape", std::vector<std::int64_t>{k, k}},
                                         {"strides", std::vector<std::int64_t>{s, s}}}};
          }};
  return type;
}

const LayerType& globalavgpool_layer_type() {
  static const LayerType type{
      .config = {.type = "globalavgpool",
                 .keys = {},
                 .doc = "Mean of each channel: [C, H, W] to [C], before the classifier."},
      .make = [](const LayerSpec&, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<GlobalAvgPool>();
      },
      // ONNX keeps [N, C, 1, 1] where conflux's layer yields [N, C].
      .onnx =
          [](const LayerSpec&) {
            return OnnxOp{.op_type = "GlobalAveragePool", .attributes = {}, .flatten_output = true};
          }};
  return type;
}

}  // namespace conflux::model
