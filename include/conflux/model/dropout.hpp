#pragma once
/// @file dropout.hpp
/// Inverted dropout with masks keyed by sample, so they do not depend on where a sample runs.

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/core/host_device.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::model {

/// "drop" in ASCII: keeps dropout's draws apart from the data streams (docs/design.md
/// invariant 2); every device's dropout draws from it. Frozen: changing it changes every
/// trained model.
inline constexpr std::uint64_t kDropoutStream = 0x64726f70;

/// The generator of one row's mask: layer `salt`, global step `step`, dataset index `sample`,
/// run seed `seed`; what every device draws from, in the CPU's element order.
CONFLUX_HD inline Rng dropout_rng(std::uint64_t seed, std::uint64_t salt, std::uint64_t step,
                                  std::uint64_t sample) {
  const std::uint64_t key[] = {seed, kDropoutStream, salt, step, sample};
  return Rng(key, 5);
}

/// One element's mask value: 0 with probability `rate` (a 24-bit uniform against the rate in
/// float: P(drop) = rate to within 2^-24), else `scale`.
CONFLUX_HD inline float dropout_factor(Rng& rng, float rate, float scale) {
  return rng.uniform() < rate ? 0.0f : scale;
}

/// Training pass with rate p > 0: each element is kept with probability 1 - p and scaled by
/// float(1 / (1 - p)), or zeroed. Evaluation pass, p = 0, and the one-input forward/backward:
/// identity. Any input shape.
///
/// The mask of batch row r is drawn element by element, in row-major order, from
/// Rng{pass.seed, "drop", salt, pass.step, sample} with sample = pass.samples[r] (r when
/// pass.samples is empty): a sample gets the same mask on whichever trainer and in whichever
/// row it lands (docs/design.md invariant 2).
class Dropout final : public Layer {
 public:
  /// Layer with the drop probability `rate` in [0, 1).
  explicit Dropout(double rate);
  std::string type() const override { return "dropout"; }
  std::string describe() const override;
  SampleShape output_shape(const SampleShape& input) const override { return input; }
  /// Sets the salt that keeps the masks of the model's dropout layers apart; the model passes
  /// the layer's index in the model. 0 until set.
  void set_salt(std::uint64_t salt) noexcept { salt_ = salt; }

  /// Identity (evaluation pass).
  void forward(const Tensor& in, Tensor& out) override;
  /// Identity (gradient of the evaluation pass).
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
  void forward_pass(const Pass& pass, Inputs in, Tensor& out) override;
  void backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                     InputGrads grad_in) override;

 private:
  double rate_;
  float scale_;  // float(1 / (1 - rate)): the factor of kept elements
  std::uint64_t salt_ = 0;
  bool masked_ = false;      // whether the last forward applied a mask
  std::vector<float> mask_;  // of the last forward: 0 or scale_ per element
};

}  // namespace conflux::model
