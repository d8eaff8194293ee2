#pragma once
/// @file model.hpp
/// A sequential model with flat parameter and gradient buffers.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/model/graph_walk.hpp"
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
/// Small layer scratch (im2col's one-sample patch buffer), the input batch and the data are
/// not in it; oneDNN's batch-sized shared scratch and a fused ReLU's output and gradient
/// (which share its input layer's) are.
struct ModelFootprint {
  std::vector<LayerFootprint> layers;  ///< in model order
  /// Per sample: the scratch oneDNN's convolutions share (blocked copies; an upper bound).
  std::size_t scratch_floats = 0;
  /// All parameters; equals Model::params().size() of the model the specs build.
  std::size_t params() const;
  /// Bytes for batches of `batch` samples: the sum over the layers, and the scratch.
  double bytes(std::size_t batch) const;
  /// Index of the layer with the most bytes for `batch` samples.
  std::size_t largest(std::size_t batch) const;
};

/// Where one layer's tensors are in a model's flat buffers (Model::layer_slices).
struct LayerSlice {
  std::size_t param_offset = 0;   ///< into params() (and grads())
  std::size_t param_count = 0;    ///< parameters, in param_layout order
  std::size_t buffer_offset = 0;  ///< into state() (after every parameter)
  std::size_t buffer_count = 0;   ///< buffers, in buffer_layout order
};

/// Watches a model's layer calls, e.g. to clock each layer (conflux-bench gemm-limit). The
/// model calls it around every layer's forward and backward pass when one is set.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  /// Layer `index` (in spec order) starts its forward (`backward` false) or backward pass.
  virtual void begin(std::size_t index, bool backward) = 0;
  /// ... and ends it.
  virtual void end(std::size_t index, bool backward) = 0;
};

/// A graph of layers (a chain when the specs name no inputs). All parameters are one
/// contiguous float buffer (likewise gradients), in layer order; ParamInfo names each piece.
/// Buffers (batch norm's running statistics) follow the parameters in the same storage, so
/// that state() is everything model.h5 and checkpoints hold.
class Model {
 public:
  /// Builds the layers for inputs of `input_shape` ({C, H, W} or {F}), wires them
  /// (model/graph.hpp), checks that the last layer yields {num_classes}, and initialises
  /// parameters from Rng{seed, "model-init"}. InputError for bad wiring or shape mismatches
  /// (naming the layer, and where it was written when the spec says). `options` say how the
  /// layers compute (the same parameters whatever they say).
  Model(const std::vector<LayerSpec>& specs, const SampleShape& input_shape, int num_classes,
        std::uint64_t seed, const LayerOptions& options = {});
  /// The memory a Model of these arguments would need, walking the specs as the constructor
  /// does (the same checks and InputErrors) without allocating parameters.
  static ModelFootprint footprint(const std::vector<LayerSpec>& specs,
                                  const SampleShape& input_shape, int num_classes,
                                  const LayerOptions& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  /// Evaluation forward pass of a batch [N, input...] (running statistics, no dropout);
  /// returns logits [N, num_classes], valid until the next forward().
  /// The layers keep pointers to `input` for backward(): it must stay valid and unchanged until
  /// backward() has run (the rvalue overloads are deleted so that a temporary cannot bind).
  const Tensor& forward(const Tensor& input);
  /// Forward pass for `pass` (training: batch statistics, dropout). The input, the pass, and
  /// the sample indices it points to, must stay valid until backward().
  const Tensor& forward(const Tensor& input, const Pass& pass);
  const Tensor& forward(Tensor&&) = delete;
  const Tensor& forward(Tensor&&, const Pass&) = delete;
  /// Backward pass from dL/dlogits of the last forward(); overwrites grads().
  void backward(const Tensor& grad_logits);

  /// All trainable parameters, flat.
  std::span<float> params() noexcept { return std::span(state_).first(num_params_); }
  std::span<const float> params() const noexcept { return std::span(state_).first(num_params_); }
  /// All parameter gradients, flat, same layout as params().
  std::span<float> grads() noexcept { return grads_; }
  /// Names, shapes and offsets of the parameter tensors.
  const std::vector<ParamInfo>& param_infos() const noexcept { return param_infos_; }
  /// Non-trained state (running statistics), flat, after the parameters in state().
  std::span<const float> buffers() const noexcept { return std::span(state_).subspan(num_params_); }
  /// Parameters then buffers: what model.h5, checkpoints and the weights digest hold.
  std::span<float> state() noexcept { return state_; }
  std::span<const float> state() const noexcept { return state_; }
  /// Names, shapes and offsets (into state()) of every tensor of state(): the parameters'
  /// then the buffers'.
  const std::vector<ParamInfo>& state_infos() const noexcept { return state_infos_; }
  /// Per-sample input shape.
  const SampleShape& input_shape() const noexcept { return input_shape_; }
  /// Per-sample output shape: {num_classes}.
  const SampleShape& output_shape() const noexcept { return output_shapes_.back(); }
  /// The layer specs the model was built from, and how they are wired.
  const std::vector<LayerSpec>& specs() const noexcept { return specs_; }
  /// One line per layer: "conv2d 3->32 k3 p1 : [32,32,32] (896 params)" (graphs also show
  /// names and inputs).
  std::vector<std::string> summary() const;
  /// How the layers compute (the constructor's options).
  const LayerOptions& layer_options() const noexcept { return options_; }
  /// Layer `index`'s one-line description (Layer::describe).
  std::string describe(std::size_t index) const { return layers_.at(index)->describe(); }
  /// Watches the layer calls from now on; nullptr stops. The observer must outlive its use.
  void set_observer(LayerObserver* observer) noexcept { observer_ = observer; }
  /// The order of the layer calls and where their tensors live, for another device's walk of
  /// this model (gpu::DeviceModel).
  const GraphPlan& plan() const noexcept { return plan_; }
  /// Per layer, the per-sample shapes of its inputs.
  const std::vector<std::vector<SampleShape>>& input_shapes() const noexcept {
    return input_shapes_;
  }
  /// Per layer, where its parameters and buffers are in the flat buffers.
  const std::vector<LayerSlice>& layer_slices() const noexcept { return slices_; }
  /// Per layer, the per-sample shape of its output.
  const std::vector<SampleShape>& output_shapes() const noexcept { return output_shapes_; }

 private:
  struct Wired;  // layers, wiring and shapes: the one walk of the specs
  static Wired wire(const std::vector<LayerSpec>& specs, const SampleShape& input_shape,
                    int num_classes, const LayerOptions& options = {});
  // The construction steps after the layers are made, in order.
  std::vector<std::size_t> lay_out_state();
  void bind_and_init(const std::vector<std::size_t>& layer_begin, std::uint64_t seed);
  void tell_unneeded_input_grads();
  void fuse_relus(const std::vector<std::vector<std::size_t>>& consumers);
  struct LayerCalls;  // the CPU's layer calls of the walk

  std::vector<LayerSpec> specs_;
  std::vector<std::unique_ptr<Layer>> layers_;
  GraphPlan plan_;
  std::vector<std::vector<SampleShape>> input_shapes_;  // per layer, one per input
  std::vector<SampleShape> output_shapes_;              // per layer; back() is the model's
  std::vector<LayerSlice> slices_;                      // per layer
  std::vector<ParamInfo> param_infos_;
  std::vector<ParamInfo> state_infos_;
  std::size_t num_params_ = 0;
  std::vector<float> state_;  // parameters, then buffers
  std::vector<float> grads_;
  GraphWalk<Tensor> walk_{0};
  SampleShape input_shape_;
  LayerOptions options_;
  Pass last_pass_;
  LayerObserver* observer_ = nullptr;
};

}  // namespace conflux::model
