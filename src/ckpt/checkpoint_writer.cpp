#include "conflux/ckpt/checkpoint_writer.hpp"

#include <chrono>
#include <exception>
#include <future>
#include <string>
#include <string_view>
#include <system_error>

#include "conflux/ckpt/checkpoint_layout.hpp"
#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;

// Fixed 1.8 object formats: metadata blocks carry checksums (so HDF5 itself notices most
// damaged metadata) and every HDF5 >= 1.8 reader (h5dump, h5py) can read the file. Strict
// close: closing fails rather than silently deferring while a handle is open.
constexpr h5::CreateOptions kFileOptions{.v18_objects = true,
                                         .strict_close = true,
                                         .create_parent_groups = true,
                                         .utf8_link_names = true};

// Contiguous (the default), no compression, and no fill values written before the data.
const h5::DatasetOptions kNumericOptions{.skip_fill = true};

// Checks that the state describes itself consistently (a caller's bug otherwise).
void check_writable(const fs::path& path, const TrainingState& state) {
  const std::string name = path.string();
  std::uint64_t offset = 0;
  for (const TensorInfo& t : state.tensors) {
    CONFLUX_CHECK(valid_tensor_name(t.name),
                  "cannot write checkpoint {}: '{}' cannot be a tensor name (empty, '/', or "
                  "'{}')",
                  name, t.name, kTensorNames);
    CONFLUX_CHECK(t.offset == offset,
                  "cannot write checkpoint {}: tensor {} starts at {}, expected {} (tensors must "
                  "tile the parameters in order)",
                  name, t.name, t.offset, offset);
    std::uint64_t n = 1;
    for (const std::uint64_t d : t.shape) n *= d;
    offset += n;
    CONFLUX_CHECK(offset <= state.params.size(),
                  "cannot write checkpoint {}: tensor {} ends past the {} parameters", name, t.name,
                  state.params.size());
  }
  CONFLUX_CHECK(offset == state.params.size(),
                "cannot write checkpoint {}: the tensors cover {} of {} parameters", name, offset,
                state.params.size());
  // Optimiser buffers cover the trainable parameters, which come first; the model's own
  // buffers (running statistics) follow them and have no optimiser state.
  const std::size_t trainable =
      state.optimizer.buffers.empty() ? 0 : state.optimizer.buffers.front().values.size();
  for (const model::OptimizerBuffer& b : state.optimizer.buffers) {
    CONFLUX_CHECK(valid_tensor_name(b.name) && b.values.size() == trainable &&
                      trainable <= state.params.size(),
                  "cannot write checkpoint {}: optimiser buffer '{}' has {} elements, the first "
                  "{}, for a model state of {} (or an invalid name)",
                  name, b.name, b.values.size(), trainable, state.params.size());
  }
}

// The root attributes: the format, its version and the checksum, which the reader checks, and
// informational copies of a few datasets.
void write_attributes(h5::File& file, const TrainingState& state, const std::string& checksum) {
  constexpr auto kFixed = h5::StringStorage::kFixedLength;
  file.write_string_attribute("/", "format", kFormat, kFixed);
  file.write_attribute<std::int32_t>("/", "format_version", kFormatVersion);
  file.write_string_attribute("/", "checksum", checksum, kFixed);
  file.write_attribute("/", "global_step", state.global_step);
  file.write_attribute("/", "epoch", state.epoch);
  file.write_string_attribute("/", "created", state.created, kFixed);
}

// Writes the file at `temp`. The numeric datasets go from the state's memory straight to the
// file: one copy, into the page cache, as a plain sequential write makes. `checksum` is
// computed meanwhile on another thread and is only needed for the attributes written last.
void write_file(const fs::path& temp, const CheckpointLayout& layout, const TrainingState& state,
                std::future<std::string>& checksum) {
  h5::File file = h5::File::create(temp, kFileOptions);
  for (const LayoutEntry& e : layout.entries()) {
    if (e.element != nullptr) {
      file.write_elements(e.path, *e.element, e.dims, e.data, kNumericOptions);
    } else {
      file.write_strings(e.path, e.dims, e.strings);
    }
  }
  write_attributes(file, state, checksum.get());
  file.close();  // a failed close discards the file (h5::File) before the temp file is removed
}

}  // namespace

WriteStats write_checkpoint(const fs::path& path, const TrainingState& state) {
  const auto start = std::chrono::steady_clock::now();
  check_writable(path, state);
  const CheckpointLayout layout(state);
  // The checksum is computed beside the write: both only read `layout`.
  std::future<std::string> checksum =
      std::async(std::launch::async, [&layout] { return layout.checksum(); });
  try {
    publish_atomically(path, [&](const fs::path& temp) {
      write_file(temp, layout, state, checksum);
    });  // every HDF5 handle is closed when write_file returns, before the fsync and rename
  } catch (const std::exception& e) {  // an InputError or bad_alloc is still a failed write
    CONFLUX_RUNTIME_ERROR("cannot write checkpoint {}: {}", path.string(), e.what());
  }
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(path, ec);
  CONFLUX_CHECK(!ec, "cannot stat the checkpoint {} just written: {}", path.string(), ec.message());
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  return {.bytes = bytes, .seconds = seconds.count()};
}

}  // namespace conflux::ckpt
