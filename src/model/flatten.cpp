#include "conflux/model/flatten.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <limits>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {

SampleShape Flatten::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(!input.empty(), "expects a non-empty sample shape");
  // A tensor dimension is an int: a larger count would wrap into a wrong (or negative) width.
  const std::size_t features = Tensor::count_of(input);
  CONFLUX_REQUIRE(features <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                  "flattens [{}] into {} features, more than the {} a tensor dimension holds",
                  fmt::join(input, ","), features, std::numeric_limits<int>::max());
  return {static_cast<int>(features)};
}

void Flatten::forward(const Tensor& in, Tensor& out) {
  CONFLUX_CHECK(!in.shape.empty(), "flatten got a tensor without a batch dimension");
  // Computed from the shape rather than per_sample() so that an empty batch keeps its width.
  const std::size_t features =
      std::accumulate(in.shape.begin() + 1, in.shape.end(), std::size_t{1}, std::multiplies<>());
  out.shape.assign({in.batch(), static_cast<int>(features)});
  out.data = in.data;  // copy-assignment reuses out's capacity
}

void Flatten::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  CONFLUX_CHECK(grad_out.size() == in.size(),
                "flatten: backward gradient of {} values for {} inputs", grad_out.size(),
                in.size());
  grad_in.shape = in.shape;
  grad_in.data = grad_out.data;
}

const LayerType& flatten_layer_type() {
  static const LayerType type{
      .config = {.type = "flatten",
                 .keys = {},
                 .doc = "Flattens [C, H, W] to [C*H*W] before linear layers."},
      .make = [](const LayerSpec&, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Flatten>();
      },
      // [N, C, H, W] -> [N, C*H*W] in C order, like conflux.
      .onnx =
          [](const LayerSpec&) {
            return OnnxOp{.op_type = "Flatten", .attributes = {{"axis", std::int64_t{1}}}};
          }};
  return type;
}

}  // namespace conflux::model
