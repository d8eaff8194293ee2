#pragma once
/// @file bound_layer.hpp
/// Test helper: one layer with its own parameter, gradient and buffer storage, initialised as a
/// Model would initialise it.

#include <memory>
#include <vector>

#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::testing {

/// A layer bound to buffers it owns.
struct BoundLayer {
  std::unique_ptr<model::Layer> layer;
  std::vector<float> params;
  std::vector<float> grads;
  std::vector<float> buffers;  ///< buffer_layout's tensors (batch norm's running statistics)
};

/// Makes the layer of `spec` (computing as `options` say) for inputs of `sample`, binds storage
/// and initialises it.
inline BoundLayer bind_layer(const LayerSpec& spec, const model::SampleShape& sample, Rng& rng,
                             const model::LayerOptions& options = {}) {
  BoundLayer b{model::make_layer(spec, options), {}, {}, {}};
  const auto count = [](const std::vector<model::ParamInfo>& layout) {
    std::size_t total = 0;
    for (const model::ParamInfo& p : layout) total += model::Tensor::count_of(p.shape);
    return total;
  };
  const std::size_t total = count(b.layer->param_layout(sample));
  b.params.assign(total, 0.0f);
  b.grads.assign(total, 0.0f);
  b.layer->bind(b.params, b.grads);
  b.buffers.assign(count(b.layer->buffer_layout(sample)), 0.0f);
  b.layer->bind_buffers(b.buffers);
  b.layer->init_params(rng);
  return b;
}

}  // namespace conflux::testing
