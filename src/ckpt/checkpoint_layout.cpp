#include "conflux/ckpt/checkpoint_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstddef>

#include "conflux/core/crc32c.hpp"

namespace conflux::ckpt {

// The checksum and the numeric datasets use the in-memory bytes as the little-endian bytes
// the file stores; a big-endian port would have to byte-swap them for the checksum.
static_assert(std::endian::native == std::endian::little,
              "checkpoints assume a little-endian host");

const char* const kRngScheme =
    "counter-based: every random number is a pure function of Rng{seed, stream, epoch, sample} "
    "(epoch plan: Rng{seed, \"plan\", epoch}; augmentations: Rng{seed, transform stream, epoch, "
    "sample index}); there is no generator state to save, so /rng/seed together with /position "
    "is the complete random-number state of the run";

bool valid_tensor_name(const std::string& name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name != kTensorNames;
}

CheckpointLayout::CheckpointLayout(const TrainingState& state, std::string rng_scheme)
    : rng_scheme_(std::move(rng_scheme)) {
  for (const TensorInfo& t : state.tensors) tensor_names_.push_back(t.name);
  for (const model::OptimizerBuffer& b : state.optimizer.buffers) buffer_names_.push_back(b.name);
  for (const TrainerProgress& p : state.progress) {
    next_batch_index_.push_back(p.next_batch_index);
    offload_ratio_.push_back(p.offload.ratio);
    offload_credit_.push_back(p.offload.credit);
  }
  add_position(state);
  add_model_and_optimizer(state);
  add_trainers();
  add_accounting_and_run(state);
  std::ranges::sort(entries_, {}, &LayoutEntry::path);
}

template <typename T>
void CheckpointLayout::add_scalar(std::string path, const T& value) {
  entries_.push_back({.path = std::move(path), .element = &h5::element_type<T>(), .data = &value});
}

template <typename T>
void CheckpointLayout::add_vector(std::string path, std::span<const T> values) {
  entries_.push_back({.path = std::move(path),
                      .element = &h5::element_type<T>(),
                      .dims = {values.size()},
                      .data = values.data()});
}

void CheckpointLayout::add_strings(std::string path, std::span<const std::string> values,
                                   bool scalar) {
  std::vector<hsize_t> dims;
  if (!scalar) dims.push_back(values.size());
  entries_.push_back({.path = std::move(path), .dims = std::move(dims), .strings = values});
}

void CheckpointLayout::add_position(const TrainingState& state) {
  add_scalar("/position/epoch", state.epoch);
  add_scalar("/position/step", state.step);
  add_scalar("/position/global_step", state.global_step);
  add_scalar("/position/steps_per_epoch", state.steps_per_epoch);
  add_scalar("/position/global_batch", state.global_batch);
  add_scalar("/position/dataset_size", state.dataset_size);
  add_scalar("/position/trainers", state.trainers);
  add_scalar("/position/workers", state.workers);
  add_scalar("/rng/seed", state.seed);
  add_strings("/rng/scheme", {&rng_scheme_, 1}, true);
}

void CheckpointLayout::add_model_and_optimizer(const TrainingState& state) {
  for (const TensorInfo& t : state.tensors) {
    entries_.push_back({.path = "/model/" + t.name,
                        .element = &h5::element_type<float>(),
                        .dims = {t.shape.begin(), t.shape.end()},
                        .data = state.params.data() + t.offset});
  }
  add_strings(fmt::format("/model/{}", kTensorNames), tensor_names_, false);
  add_strings("/optimizer/name", {&state.optimizer.name, 1}, true);
  add_scalar("/optimizer/steps", state.optimizer.steps);
  add_strings(fmt::format("/optimizer/{}", kBufferNames), buffer_names_, false);
  for (const model::OptimizerBuffer& b : state.optimizer.buffers) {
    add_vector<float>("/optimizer/buffers/" + b.name, b.values);
  }
  add_scalar("/optimizer/lr", state.lr);
}

void CheckpointLayout::add_trainers() {
  add_vector<std::uint64_t>("/trainers/next_batch_index", next_batch_index_);
  add_vector<double>("/trainers/offload_ratio", offload_ratio_);
  add_vector<double>("/trainers/offload_credit", offload_credit_);
}

void CheckpointLayout::add_accounting_and_run(const TrainingState& state) {
  add_scalar("/accounting/epoch_loss_sum", state.epoch_loss_sum);
  add_scalar("/accounting/epoch_correct", state.epoch_correct);
  add_scalar("/accounting/epoch_samples", state.epoch_samples);
  add_scalar("/accounting/epoch_seconds", state.epoch_seconds);
  add_scalar("/accounting/elapsed_seconds", state.elapsed_seconds);
  add_vector<double>("/accounting/audit_counts", state.audit_counts);
  add_strings("/run/config", {&state.config_toml, 1}, true);
  add_strings("/run/metrics", state.metrics, false);
  add_strings("/run/created", {&state.created, 1}, true);
}

std::string CheckpointLayout::checksum() const {
  std::uint32_t crc = 0;
  const auto feed = [&crc](const void* data, std::size_t size) {
    crc = crc32c(crc, {static_cast<const std::byte*>(data), size});
  };
  for (const LayoutEntry& e : entries_) {
    const std::string header =
        fmt::format("{}\n{}\n[{}]\n", e.path, e.type_name(), fmt::join(e.dims, ","));
    feed(header.data(), header.size());
    if (e.element == nullptr) {
      for (const std::string& s : e.strings) feed(s.data(), s.size() + 1);  // with its NUL
      continue;
    }
    std::uint64_t count = 1;
    for (const hsize_t d : e.dims) count *= d;
    feed(e.data, count * e.element->size);
  }
  return fmt::format("crc32c:{:08x}", crc);
}

}  // namespace conflux::ckpt
