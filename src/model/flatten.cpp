#include "conflux/model/flatten.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <numeric>

#include "conflux/core/error.hpp"

namespace conflux::model {

SampleShape Flatten::output_shape(const SampleShape& input) const {
  CONFLUX_REQUIRE(!input.empty(), "expects a non-empty sample shape");
  return {static_cast<int>(Tensor::count_of(input))};
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

}  // namespace conflux::model
