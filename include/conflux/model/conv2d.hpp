#pragma once
/// @file conv2d.hpp
/// 2-D convolution (square kernel, stride, zero padding) computed as im2col + SGEMM.

#include <span>
#include <string>
#include <vector>

#include "conflux/model/im2col.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

/// Convolution, input [N, C, H, W] -> output [N, out, H', W'] with
/// H' = (H + 2 padding - kernel) / stride + 1; parameters weight {out, C, k, k}, bias {out}.
class Conv2d final : public Layer {
 public:
  /// out_channels > 0, kernel >= 1, stride >= 1, padding >= 0 (checked by make_layer).
  Conv2d(int out_channels, int kernel, int stride, int padding);
  std::string type() const override { return "conv2d"; }
  SampleShape output_shape(const SampleShape& input) const override;
  std::vector<ParamInfo> param_layout(const SampleShape& input) const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  void init_params(Rng& rng) override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;

  void set_input_grad_needed(bool needed) noexcept override { input_grad_needed_ = needed; }
  bool fuse_relu() noexcept override { return relu_.enable(); }
  std::string describe() const override;

 private:
  ConvGeometry geometry_for(const Tensor& in) const;

  int out_;
  int kernel_;
  int stride_;
  int padding_;
  int in_channels_ = 0;  // known once bound
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
  // One sample's patch matrix [C*k*k][H'*W'], small enough for the caches; backward unfolds
  // each sample again rather than keeping the batch's.
  std::vector<float> col_;
  Col2imMasks col2im_masks_;  // col2im's column masks for this layer's geometry
  bool input_grad_needed_ = true;
  FusedRelu relu_;
  std::vector<float> dy_gated_;  // one sample's gated output gradient
};

}  // namespace conflux::model
