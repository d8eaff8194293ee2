#include "conflux/model/pooling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "conflux/core/error.hpp"

namespace conflux::model {

void complete_pool_stride(LayerSpec& spec) {
  spec.stride = pool_stride(spec.kernel, spec.stride);
}

SampleShape pooled_shape(int kernel, int stride, int padding, const SampleShape& input) {
  CONFLUX_REQUIRE(input.size() == 3, "expects an image [C,H,W] but gets [{}]",
                  fmt::join(input, ","));
  const int h = input[1] + 2 * padding;
  const int w = input[2] + 2 * padding;
  const std::string padded = padding > 0 ? fmt::format(" padded by {}", padding) : "";
  CONFLUX_REQUIRE(input[0] > 0 && h >= kernel && w >= kernel,
                  "window {} does not fit the input [{}]{}", kernel, fmt::join(input, ","), padded);
  return {input[0], (h - kernel) / stride + 1, (w - kernel) / stride + 1};
}

}  // namespace conflux::model
