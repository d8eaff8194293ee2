#pragma once
// Conv2d's oneDNN kernels (train.conv_kernels = "onednn", docs/speed.md): oneDNN's direct
// convolutions on its blocked layouts, with reorders from and to conflux's NCHW tensors and
// OIHW weights. Private to src/model: nothing outside sees oneDNN.

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <span>

#include "conflux/model/im2col.hpp"
#include "conv_workspace.hpp"

namespace conflux::model {

/// What one oneDNN convolution call computes on.
struct OnednnConvCall {
  ConvGeometry geometry;  ///< one sample's input geometry, output computed
  int batch = 0;
  int out_channels = 0;
  bool relu = false;  ///< a fused ReLU: the forward writes max(y, 0)
};

/// One conv2d layer's oneDNN primitives, built per input geometry and batch size and kept.
class OnednnConv {
 public:
  /// `threads`: OpenMP threads of each call (cluster.blas_threads); `workspace` shared scratch.
  OnednnConv(int threads, std::shared_ptr<ConvWorkspace> workspace);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  /// y = conv(x, weight) + bias, then max(y, 0) with call.relu; x [N,C,H,W], y [N,out,H',W'].
  void forward(const OnednnConvCall& call, const float* x, std::span<const float> weight,
               std::span<const float> bias, float* y);
  /// From dL/dy (of the ReLU's output with call.relu, gated by the forward's output `y`):
  /// overwrites weight_grad and bias_grad, and writes dL/dx into dx unless it is nullptr.
  void backward(const OnednnConvCall& call, const float* x, const float* y, const float* dy,
                std::span<const float> weight, std::span<float> weight_grad,
                std::span<float> bias_grad, float* dx);

 private:
  struct Plan;
  Plan& plan_for(const OnednnConvCall& call);
  void add_conversions(Plan& p) const;

  int threads_;
  std::shared_ptr<ConvWorkspace> workspace_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  // Small, per layer: the weights in the forward's and the backward-data's layouts, and the
  // weight gradient in the backward-weights' layout.
  AlignedBuffer weights_fwd_, weights_bwd_, weight_grad_;
  // Keyed by batch, channels, height, width, and whether the ReLU is fused.
  std::map<std::array<int, 5>, std::unique_ptr<Plan>> plans_;
};

}  // namespace conflux::model
