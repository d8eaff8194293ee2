#pragma once
/// @file checkpoint_layout.hpp
/// What a checkpoint file holds (docs/checkpoints.md "File layout"): its format constants, the
/// table of its datasets with their types and shapes, and the checksum over them. The writer
/// writes this table, the reader checks what it read against its checksum.

#include <hdf5.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/hdf5/types.hpp"

namespace conflux::ckpt {

/// The root attribute `format` of every checkpoint.
inline constexpr const char* kFormat = "conflux-checkpoint";
/// The root attribute `format_version`. Version 3: the optimiser's name, step count and named
/// buffers (version 2 held only SGD's velocity); version 2: the checksum is CRC-32C (version 1
/// used zlib's CRC-32).
inline constexpr int kFormatVersion = 3;
/// The dataset under /optimizer listing the state buffers under /optimizer/buffers in order.
inline constexpr const char* kBufferNames = "buffer_names";
/// The dataset under /model listing the tensors in buffer order (so no tensor may be named so).
inline constexpr const char* kTensorNames = "tensor_names";
/// The text of /rng/scheme that this conflux writes.
extern const char* const kRngScheme;

/// True when `name` can name a tensor: a single non-empty HDF5 link name other than
/// kTensorNames.
bool valid_tensor_name(const std::string& name);

/// One dataset of a checkpoint, pointing at the data it holds (nothing is copied).
struct LayoutEntry {
  std::string path;                          ///< full path, e.g. "/model/layer1.weight"
  const h5::ElementType* element = nullptr;  ///< numeric element type; null: strings
  std::vector<hsize_t> dims{};               ///< empty: a scalar
  const void* data = nullptr;                ///< numeric: the elements, in memory order
  std::span<const std::string> strings{};    ///< strings: the values (one for a scalar)

  /// The type's name in the checksum: the element type's name, or "string".
  const char* type_name() const { return element != nullptr ? element->name : "string"; }
};

/// Every dataset of the checkpoint of one state, sorted by path (the checksum's order). It views
/// the state (which must outlive it) and owns the few arrays the file stores in another form.
class CheckpointLayout {
 public:
  /// The layout of `state` with /rng/scheme holding `rng_scheme`.
  explicit CheckpointLayout(const TrainingState& state, std::string rng_scheme = kRngScheme);
  CheckpointLayout(const CheckpointLayout&) = delete;  // the entries point into it
  CheckpointLayout& operator=(const CheckpointLayout&) = delete;

  /// The datasets, sorted by path.
  const std::vector<LayoutEntry>& entries() const { return entries_; }

  /// "crc32c:xxxxxxxx": CRC-32C of the datasets in path order. Per dataset: the header
  /// "<path>\n<type name>\n[<dims joined by ','>]\n", then the little-endian element bytes, or
  /// for strings each string's UTF-8 bytes followed by one NUL byte.
  std::string checksum() const;

 private:
  void add_position(const TrainingState& state);
  void add_model_and_optimizer(const TrainingState& state);
  void add_trainers();
  void add_accounting_and_run(const TrainingState& state);
  template <typename T>
  void add_scalar(std::string path, const T& value);
  template <typename T>
  void add_vector(std::string path, std::span<const T> values);
  void add_strings(std::string path, std::span<const std::string> values, bool scalar);

  // The state's fields that the file stores in another form.
  std::string rng_scheme_;
  std::vector<std::string> tensor_names_;
  std::vector<std::string> buffer_names_;
  std::vector<std::uint64_t> next_batch_index_;
  std::vector<double> offload_ratio_;
  std::vector<double> offload_credit_;
  std::vector<LayoutEntry> entries_;
};

}  // namespace conflux::ckpt
