#include "conflux/model/pooling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conflux/core/error.hpp"

namespace conflux::model {

SampleShape pooled_shape(int kernel, int stride, const SampleShape& input) {
  CONFLUX_REQUIRE(input.size() == 3, "expects an image [C,H,W] but gets [{}]",
                  fmt::join(input, ","));
  CONFLUX_REQUIRE(input[0] > 0 && input[1] >= kernel && input[2] >= kernel,
                  "window {} does not fit the input [{}]", kernel, fmt::join(input, ","));
  return {input[0], (input[1] - kernel) / stride + 1, (input[2] - kernel) / stride + 1};
}

}  // namespace conflux::model
