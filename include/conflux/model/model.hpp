#pragma once
/// @file model.hpp
/// A sequential model with flat parameter and gradient buffers.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// One layer's share of a model's memory, from its spec and input shape alone.
struct LayerFootprint {
  std::string type;                   ///< e.g. "linear"
  std::size_t params = 0;             ///< parameter count
  std::size_t activation_floats = 0;  ///< per sample: the output, and its gradient if kept
  std::size_t state_buffers = 1;      ///< optimiser buffers per parameter (SGD 1, Adam 2)
  /// Bytes: parameters, gradients and optimiser state, plus activations for `batch` samples
  /// (a double, so that absurd sizes do not wrap).
  double bytes(std::size_t batch) const;
};

/// What a model needs in memory, estimated before anything is allocated (Model::footprint).
/// A lower bound: layer scratch (conv2d's im2col), the input batch and the data are not in it.
struct ModelFootprint {
  std::vector<LayerFootprint> layers;  ///< in model order
  /// All parameters; equals Model::params().size() of the model the specs build.
  std::size_t params() const;
  /// Bytes for batches of `batch` samples: the sum over the layers.
  double bytes(std::size_t batch) const;
  /// Index of the layer with the most bytes for `batch` samples.
  std::size_t largest(std::size_t batch) const;
};

/// A stack of layers. All parameters are one contiguous float buffer (likewise gradients),
/// in layer order; ParamInfo names each piece.
class Model {
 public:
  /// Builds the layers for inputs of `input_shape` ({C, H, W} or {F}), checks that the last
  /// layer yields {num_classes}, and initialises parameters from Rng{seed, "model-init"}.
  /// InputError for shape mismatches (naming the layer index and type).
  Model(const std::vector<LayerSpec>& specs, const SampleShape& input_shape, int num_classes,
        std::uint64_t seed);
  /// The memory a Model of these arguments would need, walking the specs as the constructor
  /// does (the same shape checks and InputErrors) without allocating parameters.
  static ModelFootprint footprint(const std::vector<LayerSpec>& specs,
                                  const SampleShape& input_shape, int num_classes);
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  /// Forward pass of a batch [N, input...]; returns logits [N, num_classes]. The reference
  /// stays valid until the next forward().
  const Tensor& forward(const Tensor& input);
  /// Backward pass from dL/dlogits of the last forward(); overwrites grads().
  void backward(const Tensor& grad_logits);

  /// All parameters, flat.
  std::span<float> params() noexcept { return params_; }
  std::span<const float> params() const noexcept { return params_; }
  /// All parameter gradients, flat, same layout as params().
  std::span<float> grads() noexcept { return grads_; }
  /// Names, shapes and offsets of the parameter tensors.
  const std::vector<ParamInfo>& param_infos() const noexcept { return infos_; }
  /// Per-sample input shape.
  const SampleShape& input_shape() const noexcept { return input_shape_; }
  /// Per-sample output shape: {num_classes}.
  const SampleShape& output_shape() const noexcept { return shapes_.back(); }
  /// One line per layer: "conv2d 3->32 k3 p1 : [32,32,32] (896 params)".
  std::vector<std::string> summary() const;

 private:
  // The construction steps after the layers are made, in order.
  std::vector<std::size_t> lay_out_params();
  void bind_and_init(const std::vector<std::size_t>& layer_begin, std::uint64_t seed);

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<SampleShape> shapes_;  // shapes_[i] = input shape of layer i; back() = output
  std::vector<ParamInfo> infos_;
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<Tensor> activations_;  // activations_[i] = output of layer i
  std::vector<Tensor> gradients_;    // scratch for backward
  SampleShape input_shape_;
  const Tensor* last_input_ = nullptr;
};

}  // namespace conflux::model
