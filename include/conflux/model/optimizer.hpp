#pragma once
/// @file optimizer.hpp
/// The one optimiser interface over the model's flat parameter buffer (SGD, Adam, AdamW with
/// PyTorch's semantics; docs/training.md), its saved state, and the factory from [train].

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/config/sections.hpp"

namespace conflux::model {

/// One per-parameter state buffer of an optimiser, named as PyTorch's state_dict names it
/// ("momentum_buffer", "exp_avg", "exp_avg_sq").
struct OptimizerBuffer {
  std::string name;           ///< a single HDF5 link name
  std::vector<float> values;  ///< same layout as the parameters
};

/// Everything an optimiser needs to continue bit-identically (what checkpoints store).
struct OptimizerState {
  std::string name;                      ///< "sgd", "adam" or "adamw" (Optimizer::name())
  std::uint64_t steps = 0;               ///< updates applied so far
  std::vector<OptimizerBuffer> buffers;  ///< in the optimiser's fixed order
};

/// An optimiser updating a flat parameter buffer in place from its gradient.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// "sgd", "adam" or "adamw": the train.optimizer value it implements.
  virtual std::string_view name() const noexcept = 0;
  /// Applies one update; RuntimeError when the sizes differ from the optimiser's.
  virtual void step(std::span<float> params, std::span<const float> grads) = 0;
  /// Changes the learning rate (for schedules); used from the next step().
  virtual void set_lr(double lr) noexcept = 0;
  /// The learning rate in force.
  virtual double lr() const noexcept = 0;
  /// Updates applied so far.
  std::uint64_t steps() const noexcept { return steps_; }
  /// Records one update applied elsewhere, from this optimiser's next-step values (a device's
  /// kernels of the same update): its state buffers there, its count here.
  void count_step() noexcept { ++steps_; }
  /// Copies the state into `out`, reusing its buffers' memory (checkpoint capture).
  void save(OptimizerState& out) const;
  /// Restores a state saved by save(): InputError when it is another optimiser's,
  /// RuntimeError when its buffers do not match this optimiser's in name or size.
  void restore(const OptimizerState& state);

 protected:
  /// `buffer_names` are the state buffers, each of `num_params` zeros.
  Optimizer(std::size_t num_params, std::initializer_list<const char*> buffer_names);
  /// Checks the sizes of a step's arguments (RuntimeError naming the optimiser).
  void check_step(std::span<float> params, std::span<const float> grads) const;
  /// Buffer `i` in the order given to the constructor.
  std::vector<float>& buffer(std::size_t i) noexcept { return buffers_[i].values; }
  /// Buffer `i`, read-only.
  const std::vector<float>& buffer(std::size_t i) const noexcept { return buffers_[i].values; }
  std::uint64_t steps_ = 0;  ///< incremented by step()

 private:
  std::size_t num_params_;
  std::vector<OptimizerBuffer> buffers_;
};

/// The optimiser train.optimizer names, with the [train] hyper-parameters, for `num_params`
/// parameters. The config has checked the values and their combinations.
std::unique_ptr<Optimizer> make_optimizer(const TrainSection& train, std::size_t num_params);

/// State buffers per parameter of the optimiser train.optimizer names (sgd 1, adam and adamw
/// 2), for memory estimates.
std::size_t optimizer_state_buffers(const std::string& name) noexcept;

/// Sum of the squares of `values`, in double and in a fixed order (the same on every replica).
double sum_of_squares(std::span<const float> values) noexcept;

/// torch.nn.utils.clip_grad_norm_ over the whole buffer: when its L2 norm exceeds `max_norm`,
/// scales it by max_norm / (norm + 1e-6). Returns the norm before clipping. The sum of
/// squares is taken in double in a fixed order, so every replica clips identically.
float clip_grad_norm(std::span<float> grads, float max_norm) noexcept;

}  // namespace conflux::model
