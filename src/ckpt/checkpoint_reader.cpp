#include "conflux/ckpt/checkpoint_reader.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "conflux/ckpt/checkpoint_layout.hpp"
#include "conflux/hdf5/file.hpp"

// Throws CorruptCheckpoint (exit 2) with a fmt-formatted message.
#define CONFLUX_CORRUPT(...) \
  throw ::conflux::ckpt::CorruptCheckpoint(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;

// Checks the root attributes `format` and `format_version` and returns the stored checksum.
// (The other root attributes are informational; everything the resume uses is in datasets.)
std::string read_header(const h5::File& file) {
  const std::string& name = file.label();
  if (!file.has_attribute("/", "format")) {
    CONFLUX_CORRUPT("{}: not a conflux checkpoint (no 'format' attribute)", name);
  }
  const std::string format = file.read_string_attribute("/", "format");
  if (format != kFormat) {
    CONFLUX_CORRUPT("{}: not a conflux checkpoint (format is '{}', expected '{}')", name, format,
                    kFormat);
  }
  const auto version = file.read_attribute<std::int64_t>("/", "format_version");
  if (version != kFormatVersion) {
    CONFLUX_CORRUPT("{}: format_version {} is not supported (this conflux reads version {})", name,
                    version, kFormatVersion);
  }
  return file.read_string_attribute("/", "checksum");
}

void read_position(const h5::File& file, TrainingState& s) {
  s.epoch = file.read_scalar<std::uint32_t>("/position/epoch");
  s.step = file.read_scalar<std::uint64_t>("/position/step");
  s.global_step = file.read_scalar<std::uint64_t>("/position/global_step");
  s.steps_per_epoch = file.read_scalar<std::uint64_t>("/position/steps_per_epoch");
  s.global_batch = file.read_scalar<std::uint64_t>("/position/global_batch");
  s.dataset_size = file.read_scalar<std::uint64_t>("/position/dataset_size");
  s.trainers = file.read_scalar<std::uint32_t>("/position/trainers");
  s.workers = file.read_scalar<std::uint32_t>("/position/workers");
  s.seed = file.read_scalar<std::uint64_t>("/rng/seed");
}

// The names the string list at `names_path` holds, each a valid link name of a dataset that
// exists under `group`; `what` names them in errors ("tensor", "buffer").
std::vector<std::string> listed_names(const h5::File& file, const std::string& names_path,
                                      const std::string& group, const char* what) {
  std::vector<std::string> names = file.read_strings(names_path);
  for (const std::string& name : names) {
    if (!valid_tensor_name(name)) {
      CONFLUX_CORRUPT("{}: {} lists the invalid {} name '{}'", file.label(), names_path, what,
                      name);
    }
    const std::string path = group + "/" + name;
    if (!file.exists(path)) {
      CONFLUX_CORRUPT("{}: {} is missing (listed in {})", file.label(), path, names_path);
    }
  }
  return names;
}

// Opens the tensors /model/tensor_names lists, in its order, and records their names, shapes
// and offsets in `s`: each starts in the flat parameter buffer where the previous one ends.
std::vector<h5::Dataset> open_tensors(const h5::File& file, TrainingState& s) {
  const std::string names_path = fmt::format("/model/{}", kTensorNames);
  std::vector<h5::Dataset> tensors;
  std::uint64_t offset = 0;
  for (const std::string& name : listed_names(file, names_path, "/model", "tensor")) {
    const h5::Dataset& tensor = tensors.emplace_back(file.open_dataset<float>("/model/" + name));
    s.tensors.push_back(
        {.name = name, .shape = {tensor.dims().begin(), tensor.dims().end()}, .offset = offset});
    offset += tensor.element_count();
  }
  const std::uint64_t links = file.link_count("/model");
  if (links != tensors.size() + 1) {
    CONFLUX_CORRUPT("{}: /model holds {} tensors but {} lists {}", file.label(), links - 1,
                    names_path, tensors.size());
  }
  if (offset > file.size_at_open() / sizeof(float)) {
    CONFLUX_CORRUPT("{}: the tensors hold {} parameters, more than the file can", file.label(),
                    offset);
  }
  return tensors;
}

// The optimiser: its name, step count and the buffers /optimizer/buffer_names lists, each with
// the parameters' layout.
void read_optimizer(const h5::File& file, TrainingState& s) {
  model::OptimizerState& o = s.optimizer;
  o.name = file.read_string("/optimizer/name");
  o.steps = file.read_scalar<std::uint64_t>("/optimizer/steps");
  const std::string names_path = fmt::format("/optimizer/{}", kBufferNames);
  o.buffers.clear();
  for (const std::string& name : listed_names(file, names_path, "/optimizer/buffers", "buffer")) {
    const std::string path = "/optimizer/buffers/" + name;
    model::OptimizerBuffer& b = o.buffers.emplace_back();
    b.name = name;
    b.values = file.read_vector<float>(path);
    // Every buffer covers the trainable parameters, which come first in the model's state
    // (running statistics after them).
    const std::size_t trainable = o.buffers.front().values.size();
    if (b.values.size() != trainable || trainable > s.params.size()) {
      CONFLUX_CORRUPT(
          "{}: {} has {} elements but {} has {} (the optimiser's buffers cover the "
          "same trainable parameters, at most the model's {} parameters and buffers)",
          file.label(), path, b.values.size(), o.buffers.front().name, trainable, s.params.size());
    }
  }
  const std::uint64_t links = o.buffers.empty() ? 0 : file.link_count("/optimizer/buffers");
  if (links != o.buffers.size()) {
    CONFLUX_CORRUPT("{}: /optimizer/buffers holds {} buffers but {} lists {}", file.label(), links,
                    names_path, o.buffers.size());
  }
  s.lr = file.read_scalar<double>("/optimizer/lr");
}

// The model and the optimiser.
void read_model_and_optimizer(const h5::File& file, TrainingState& s) {
  const std::vector<h5::Dataset> tensors = open_tensors(file, s);
  const std::uint64_t total =
      s.tensors.empty() ? 0 : s.tensors.back().offset + tensors.back().element_count();
  s.params.resize(total);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    tensors[i].read_into(
        std::span<float>(s.params).subspan(s.tensors[i].offset, tensors[i].element_count()));
  }
  read_optimizer(file, s);
}

// Per-trainer progress: three arrays of one length.
void read_trainers(const h5::File& file, TrainingState& s) {
  const auto next = file.read_vector<std::uint64_t>("/trainers/next_batch_index");
  const auto ratio = file.read_vector<double>("/trainers/offload_ratio");
  const auto credit = file.read_vector<double>("/trainers/offload_credit");
  if (ratio.size() != next.size() || credit.size() != next.size()) {
    CONFLUX_CORRUPT(
        "{}: the /trainers arrays differ in length (next_batch_index {}, offload_ratio {}, "
        "offload_credit {})",
        file.label(), next.size(), ratio.size(), credit.size());
  }
  for (std::size_t t = 0; t < next.size(); ++t) {
    s.progress.push_back(
        {.next_batch_index = next[t], .offload = {.ratio = ratio[t], .credit = credit[t]}});
  }
}

void read_accounting_and_run(const h5::File& file, TrainingState& s) {
  s.epoch_loss_sum = file.read_scalar<double>("/accounting/epoch_loss_sum");
  s.epoch_correct = file.read_scalar<double>("/accounting/epoch_correct");
  s.epoch_samples = file.read_scalar<double>("/accounting/epoch_samples");
  s.epoch_seconds = file.read_scalar<double>("/accounting/epoch_seconds");
  s.elapsed_seconds = file.read_scalar<double>("/accounting/elapsed_seconds");
  s.audit_counts = file.read_vector<double>("/accounting/audit_counts");
  s.config_toml = file.read_string("/run/config");
  s.metrics = file.read_strings("/run/metrics");
  s.created = file.read_string("/run/created");
}

// Reads and checks the whole file; its errors name the file (its label) and the object.
VerifiedCheckpoint read_file(const h5::File& file) {
  const std::string stored = read_header(file);
  VerifiedCheckpoint c;
  read_position(file, c.state);
  read_model_and_optimizer(file, c.state);
  read_trainers(file, c.state);
  read_accounting_and_run(file, c.state);
  // The checksum, recomputed over what was read (every dataset of the layout).
  c.checksum = CheckpointLayout(c.state, file.read_string("/rng/scheme")).checksum();
  if (c.checksum != stored) {
    CONFLUX_CORRUPT("{}: checksum mismatch: stored {}, computed {}", file.label(), stored,
                    c.checksum);
  }
  return c;
}

}  // namespace

VerifiedCheckpoint read_verified_checkpoint(const fs::path& path) {
  const std::string label = "checkpoint " + path.string();
  try {
    const h5::File file = h5::File::open(path, {.label = label});
    return read_file(file);
  } catch (const CorruptCheckpoint&) {
    throw;
  } catch (const Error& e) {
    // Whatever stops the read (malformed content, a failed HDF5 call on damaged data) makes
    // the file unusable as a checkpoint, and resume must skip it: all are CorruptCheckpoint.
    // The message already names the file and the object.
    throw CorruptCheckpoint(e.what(), e.file(), e.line());
  } catch (const std::exception& e) {  // bad_alloc, ...
    CONFLUX_CORRUPT("{}: cannot read it: {}", label, e.what());
  }
}

TrainingState read_checkpoint(const fs::path& path) {
  return read_verified_checkpoint(path).state;
}

}  // namespace conflux::ckpt
