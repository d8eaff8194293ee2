#pragma once
/// @file conv2d.hpp
/// 2-D convolution (square kernel, stride, zero padding): im2col + SGEMM, or oneDNN's
/// direct convolutions (LayerOptions::conv).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/model/im2col.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

class OnednnConv;  // src/model/onednn_conv.hpp
struct OnednnConvCall;

/// Convolution, input [N, C, H, W] -> output [N, out, H', W'] with
/// H' = (H + 2 padding - kernel) / stride + 1; parameters weight {out, C, k, k}, bias {out}.
class Conv2d final : public Layer {
 public:
  /// out_channels > 0, kernel >= 1, stride >= 1, padding >= 0 (checked by make_layer).
  Conv2d(int out_channels, int kernel, int stride, int padding, const LayerOptions& options = {});
  ~Conv2d() override;
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
  OnednnConvCall onednn_call(const Tensor& in, const ConvGeometry& g) const;
  void forward_im2col(const Tensor& in, const ConvGeometry& g, Tensor& out);
  // dy: dL/d(output), of the fused ReLU's output when `gate` (the forward's output) is set.
  void backward_im2col(const Tensor& in, const float* dy, const float* gate, const ConvGeometry& g,
                       Tensor& grad_in);

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
  std::vector<float> dy_gated_;         // one sample's gated output gradient (im2col)
  std::unique_ptr<OnednnConv> onednn_;  // set when LayerOptions::conv is kOnednn
};

}  // namespace conflux::model
