#include "conflux/model/maxpool2d.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/core/error.hpp"
#include "conflux/model/im2col.hpp"
#include "conflux/model/layer_type.hpp"
#include "conflux/model/pooling.hpp"

namespace conflux::model {

namespace {

// The common 2x2 / stride 2 pool. Which of the four wins is random, so the comparisons are
// written as selects (cmov/blend) rather than branches, which would mispredict constantly.
void forward_2x2(const float* in, std::size_t planes, int h, int w, float* out, std::int32_t* arg) {
  const int oh_count = h / 2;
  const int ow_count = w / 2;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * static_cast<std::size_t>(h) * w;
    for (int oh = 0; oh < oh_count; ++oh) {
      const int top = 2 * oh * w;
      const float* r0 = x + top;
      const float* r1 = r0 + w;
      for (int ow = 0; ow < ow_count; ++ow) {
        const int j = 2 * ow;
        // Strict '>' keeps the first maximum on ties (row-major order a, b, c, d).
        float best = r0[j];
        std::int32_t index = top + j;
        const float b = r0[j + 1];
        const float c = r1[j];
        const float d = r1[j + 1];
        index = b > best ? top + j + 1 : index;
        best = b > best ? b : best;
        index = c > best ? top + w + j : index;
        best = c > best ? c : best;
        index = d > best ? top + w + j + 1 : index;
        best = d > best ? d : best;
        *out++ = best;
        *arg++ = index;
      }
    }
  }
}

// Backward of forward_2x2: every input of a window gets the window's gradient or zero, written
// once (no zero pass, no scatter). "0.0f + g" is what the generic '+=' onto zeros computes
// (it turns -0 into +0), so the bits are the same. Rows and columns outside every window (odd
// sizes) stay zero.
void backward_2x2(const float* dy, const std::int32_t* arg, std::size_t planes, int h, int w,
                  float* dx) {
  const int oh_count = h / 2;
  const int ow_count = w / 2;
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  if (h % 2 != 0 || w % 2 != 0) std::fill(dx, dx + planes * plane, 0.0f);
  for (std::size_t p = 0; p < planes; ++p, dx += plane) {
    for (int oh = 0; oh < oh_count; ++oh) {
      const int top = 2 * oh * w;
      float* r0 = dx + top;
      float* r1 = r0 + w;
      for (int ow = 0; ow < ow_count; ++ow) {
        const int j = 2 * ow;
        const float g = 0.0f + *dy++;
        const std::int32_t at = *arg++;
        r0[j] = at == top + j ? g : 0.0f;
        r0[j + 1] = at == top + j + 1 ? g : 0.0f;
        r1[j] = at == top + w + j ? g : 0.0f;
        r1[j + 1] = at == top + w + j + 1 ? g : 0.0f;
      }
    }
  }
}

// The padded pool, window by window: each window is clipped to the image, which is what -infinity
// padding computes, since padding <= kernel / 2 leaves a real element in every window. The
// first real element starts the scan, as in PyTorch, so ties go to the first maximum. The
// window geometry is a convolution's, one channel per plane.
void forward_padded(const float* in, std::size_t planes, const ConvGeometry& s, float* out,
                    std::int32_t* arg) {
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * static_cast<std::size_t>(s.height) * s.width;
    for (int oh = 0; oh < s.out_height; ++oh) {
      const int h0 = oh * s.stride - s.padding;
      const int h_begin = std::max(h0, 0);
      const int h_end = std::min(h0 + s.kernel, s.height);
      for (int ow = 0; ow < s.out_width; ++ow) {
        const int w0 = ow * s.stride - s.padding;
        const int w_begin = std::max(w0, 0);
        const int w_end = std::min(w0 + s.kernel, s.width);
        int best = h_begin * s.width + w_begin;
        float best_value = x[best];
        for (int ih = h_begin; ih < h_end; ++ih) {
          for (int iw = w_begin; iw < w_end; ++iw) {
            const int at = ih * s.width + iw;
            if (x[at] > best_value) {
              best_value = x[at];
              best = at;
            }
          }
        }
        *out++ = best_value;
        *arg++ = best;
      }
    }
  }
}

}  // namespace

MaxPool2d::MaxPool2d(int kernel, int stride, int padding)
    : kernel_(kernel), stride_(pool_stride(kernel, stride)), padding_(padding) {
  CONFLUX_REQUIRE(kernel >= 1, "maxpool: kernel must be >= 1, got {}", kernel);
  CONFLUX_REQUIRE(stride >= 0, "maxpool: stride must be >= 0 (0 = same as kernel), got {}", stride);
  CONFLUX_REQUIRE(padding >= 0 && padding <= kernel / 2,
                  "maxpool: padding must be between 0 and half the kernel ({} for kernel {}), "
                  "got {}",
                  kernel / 2, kernel, padding);
}

SampleShape MaxPool2d::output_shape(const SampleShape& input) const {
  return pooled_shape(kernel_, stride_, padding_, input);
}

void MaxPool2d::forward(const Tensor& in, Tensor& out) {
  CONFLUX_CHECK(in.shape.size() == 4 && in.shape[2] + 2 * padding_ >= kernel_ &&
                    in.shape[3] + 2 * padding_ >= kernel_,
                "{} got input [{}]", describe(), fmt::join(in.shape, ","));
  const int n = in.batch();
  const int c = in.shape[1];
  const int h = in.shape[2];
  const int w = in.shape[3];
  const int oh_count = (h + 2 * padding_ - kernel_) / stride_ + 1;
  const int ow_count = (w + 2 * padding_ - kernel_) / stride_ + 1;
  out.resize({n, c, oh_count, ow_count});
  argmax_.resize(out.size());
  const std::size_t planes = static_cast<std::size_t>(n) * c;
  const std::size_t in_plane = static_cast<std::size_t>(h) * w;
  float* y = out.data.data();
  std::int32_t* arg = argmax_.data();
  if (padding_ > 0) {
    const ConvGeometry shape{.channels = 1,
                             .height = h,
                             .width = w,
                             .kernel = kernel_,
                             .stride = stride_,
                             .padding = padding_,
                             .out_height = oh_count,
                             .out_width = ow_count};
    forward_padded(in.data.data(), planes, shape, y, arg);
    return;
  }
  if (kernel_ == 2 && stride_ == 2) {
    forward_2x2(in.data.data(), planes, h, w, y, arg);
    return;
  }
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in.data.data() + p * in_plane;
    for (int oh = 0; oh < oh_count; ++oh) {
      for (int ow = 0; ow < ow_count; ++ow) {
        const int top = oh * stride_ * w + ow * stride_;
        int best = top;
        float best_value = x[top];
        for (int ki = 0; ki < kernel_; ++ki) {
          const int row = top + ki * w;
          for (int kj = 0; kj < kernel_; ++kj) {
            // Strict '>' keeps the first maximum on ties.
            if (x[row + kj] > best_value) {
              best_value = x[row + kj];
              best = row + kj;
            }
          }
        }
        *y++ = best_value;
        *arg++ = best;
      }
    }
  }
}

void MaxPool2d::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  CONFLUX_CHECK(in.shape.size() == 4 && grad_out.size() == argmax_.size() &&
                    grad_out.shape.size() == 4 && grad_out.shape[0] == in.shape[0] &&
                    grad_out.shape[1] == in.shape[1],
                "{}: backward gradient [{}] does not match the last forward", describe(),
                fmt::join(grad_out.shape, ","));
  grad_in.resize(in.shape);
  const std::size_t planes = static_cast<std::size_t>(in.shape[0]) * in.shape[1];
  if (kernel_ == 2 && stride_ == 2 && padding_ == 0) {
    backward_2x2(grad_out.data.data(), argmax_.data(), planes, in.shape[2], in.shape[3],
                 grad_in.data.data());
    return;
  }
  std::fill(grad_in.data.begin(), grad_in.data.end(), 0.0f);
  const std::size_t in_plane = static_cast<std::size_t>(in.shape[2]) * in.shape[3];
  const std::size_t out_plane = static_cast<std::size_t>(grad_out.shape[2]) * grad_out.shape[3];
  const float* dy = grad_out.data.data();
  const std::int32_t* arg = argmax_.data();
  for (std::size_t p = 0; p < planes; ++p) {
    float* dx = grad_in.data.data() + p * in_plane;
    // '+=' because overlapping windows (stride < kernel) can share a maximum.
    for (std::size_t j = 0; j < out_plane; ++j) dx[arg[j]] += dy[j];
    dy += out_plane;
    arg += out_plane;
  }
}

std::string MaxPool2d::describe() const {
  return padding_ > 0 ? fmt::format("maxpool k{} s{} p{}", kernel_, stride_, padding_)
                      : fmt::format("maxpool k{} s{}", kernel_, stride_);
}

const LayerType& maxpool_layer_type() {
  static const LayerType type{
      .config = {.type = "maxpool",
                 .keys = {layer_int_key("kernel", &LayerSpec::kernel, 1, 64, "2", "Window size."),
                          layer_int_key("stride", &LayerSpec::stride, 0, 64, "0",
                                        "Stride; 0 = same as the window."),
                          layer_int_key("padding", &LayerSpec::padding, 0, 32, "0",
                                        "Implicit -infinity padding on each side (never the "
                                        "maximum); at most half the window, as in PyTorch.")},
                 .doc = "Max pooling.",
                 .complete = complete_pool_stride},
      .make = [](const LayerSpec& spec, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<MaxPool2d>(spec.kernel, spec.stride, spec.padding);
      },
      // Floor, and padded positions never win: ONNX's defaults too.
      .onnx =
          [](const LayerSpec& spec) {
            const std::int64_t k = spec.kernel, s = pool_stride(spec.kernel, spec.stride),
                               p = spec.padding;
            OnnxOp op{.op_type = "MaxPool",
                      .attributes = {{"kernel_shape", std::vector<std::int64_t>{k, k}},
                                     {"strides", std::vector<std::int64_t>{s, s}}}};
            if (p > 0) op.attributes.push_back({"pads", std::vector<std::int64_t>{p, p, p, p}});
            return op;
          }};
  return type;
}

}  // namespace conflux::model
