#pragma once
/// @file layer.hpp
/// The layer interface and the factory of the built-in layers (their types and keys are
/// declared in config/schema's layer_keys()).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/config/layer_spec.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::model {

/// Per-sample shape: {C, H, W} for images or {F} for feature vectors.
using SampleShape = std::vector<int>;

/// A named parameter tensor inside the model's flat parameter buffer.
struct ParamInfo {
  std::string name;        ///< e.g. "layer0.linear.weight"
  std::vector<int> shape;  ///< e.g. {out, in}
  std::size_t offset = 0;  ///< into Model::params()
  std::size_t size = 0;
};

/// One differentiable layer. Parameters live in the model's flat buffers (so that gradient
/// allreduce is one call and the weight digest is one hash); a layer gets spans into them.
class Layer {
 public:
  virtual ~Layer() = default;
  /// Short type name, e.g. "linear".
  virtual std::string type() const = 0;
  /// One-line description with the configuration, e.g. "conv2d 3->32 k3 p1"; type() by default.
  virtual std::string describe() const { return type(); }
  /// When false, backward() may skip dL/din (leaving grad_in empty): the model clears it for
  /// its first layer with parameters, whose input gradient nobody reads. No-op by default.
  virtual void set_input_grad_needed(bool /*needed*/) noexcept {}
  /// Output per-sample shape for an input per-sample shape; InputError if incompatible.
  virtual SampleShape output_shape(const SampleShape& input) const = 0;
  /// Parameter tensors (name suffix, shape) this layer needs for `input`; empty by default.
  virtual std::vector<ParamInfo> param_layout(const SampleShape& /*input*/) const { return {}; }
  /// Gives the layer its parameter and gradient storage (concatenated in param_layout order).
  virtual void bind(std::span<float> /*params*/, std::span<float> /*grads*/) {}
  /// Initialises parameters like PyTorch's defaults: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  virtual void init_params(Rng& /*rng*/) {}
  /// Computes out from in (in.shape = [N, input...]); keeps what backward needs.
  virtual void forward(const Tensor& in, Tensor& out) = 0;
  /// Given the forward input and dL/dout, writes dL/din into grad_in and overwrites (does not
  /// accumulate) this layer's parameter gradients. Must be called after forward(in, ...).
  virtual void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) = 0;
};

/// Creates a layer from its spec; InputError for an unknown type or bad values.
std::unique_ptr<Layer> make_layer(const LayerSpec& spec);

}  // namespace conflux::model
