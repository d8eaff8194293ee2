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

/// Sums values over every trainer of a step: batch norm's synchronised statistics. The
/// training loop supplies one over its trainers; without one a replica uses its own batch.
class StatReducer {
 public:
  virtual ~StatReducer() = default;
  /// Replaces `values` by their element-wise sums over the trainers (the same on all).
  virtual void sum(std::span<double> values) = 0;
};

/// What a forward pass is for, and what its random draws depend on. A default Pass is an
/// evaluation pass (running statistics, no dropout).
struct Pass {
  bool training = false;                     ///< batch statistics and dropout when true
  std::uint64_t seed = 0;                    ///< run.seed: dropout masks
  std::uint64_t step = 0;                    ///< global training step: dropout masks
  std::span<const std::uint32_t> samples{};  ///< dataset index of each row; empty: row number
  StatReducer* reducer = nullptr;            ///< sums over trainers; nullptr: this replica only
};

/// The inputs of a layer in a graph, in the order the config names them.
using Inputs = std::span<const Tensor* const>;
/// Where a layer's backward pass writes the gradient of each input; nullptr: not needed.
using InputGrads = std::span<Tensor* const>;

/// One differentiable layer. Parameters live in the model's flat buffers (so that gradient
/// allreduce is one call and the weight digest is one hash); a layer gets spans into them.
///
/// Most layers have one input and implement the one-input forward/backward; layers that take
/// several inputs (add, concat) or depend on the pass (batch norm, dropout) override the
/// *_pass methods, which are what the model calls.
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
  /// Initialises parameters (and buffers) like PyTorch's defaults, e.g.
  /// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); layers that draw nothing leave `rng` untouched.
  virtual void init_params(Rng& /*rng*/) {}
  /// Computes out from in (in.shape = [N, input...]); keeps what backward needs.
  virtual void forward(const Tensor& in, Tensor& out) = 0;
  /// Given the forward input and dL/dout, writes dL/din into grad_in and overwrites (does not
  /// accumulate) this layer's parameter gradients. Must be called after forward(in, ...).
  virtual void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) = 0;

  /// How many inputs the layer takes: 1, or 0 for "two or more" (add, concat).
  virtual std::size_t arity() const { return 1; }
  /// Output shape for the shapes of all inputs; one input: output_shape(inputs[0]).
  virtual SampleShape output_shape_of(std::span<const SampleShape> inputs) const;
  /// Forward pass in a graph; one input and pass-independent: forward(*in[0], out).
  virtual void forward_pass(const Pass& pass, Inputs in, Tensor& out);
  /// Backward pass in a graph, after forward_pass with the same pass and inputs; writes the
  /// gradient of each input whose InputGrads entry is not nullptr. One input:
  /// backward(*in[0], grad_out, *grad_in[0]) (set_input_grad_needed tells it when that is
  /// nullptr).
  virtual void backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                             InputGrads grad_in);

  /// Asks the layer to apply a ReLU to its own output: the model fuses a ReLU that alone reads
  /// this layer's output, so that the ReLU's passes touch values while they are in the
  /// caches. Forward then writes relu(y); backward takes dL/d(relu output) and gates it by
  /// output > 0, the same operations as a separate ReLU (the same bits). The output tensor of
  /// the last forward must stay alive until backward. Returns false (the default) where the
  /// layer does not support it.
  virtual bool fuse_relu() noexcept { return false; }
  /// Non-trained state tensors (batch norm's running statistics) for `input`; none by
  /// default. They follow the parameters in model.h5 and checkpoints but get no gradient.
  virtual std::vector<ParamInfo> buffer_layout(const SampleShape& /*input*/) const { return {}; }
  /// Gives the layer its buffer storage (buffer_layout order), before init_params.
  virtual void bind_buffers(std::span<float> /*buffers*/) {}
};

/// How conv2d layers compute on the CPU (train.conv_kernels; docs/speed.md).
enum class ConvKernels {
  kIm2col,  ///< im2col + OpenBLAS SGEMM per sample: portable with pinned BLAS kernels
  kOnednn,  ///< oneDNN's direct convolutions: faster, kernels chosen per CPU
};

struct ConvWorkspace;  // scratch a model's oneDNN convolutions share (src/model)

/// What layers need beyond their specs: how to compute, not what.
struct LayerOptions {
  ConvKernels conv = ConvKernels::kIm2col;
  int threads = 1;  ///< threads of one layer call (oneDNN's OpenMP threads)
  /// Shared scratch of the oneDNN convolutions; nullptr: each layer its own.
  std::shared_ptr<ConvWorkspace> workspace;
};

/// Creates a layer from its spec; InputError for an unknown type or bad values.
std::unique_ptr<Layer> make_layer(const LayerSpec& spec, const LayerOptions& options = {});

}  // namespace conflux::model
