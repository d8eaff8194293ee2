#include "conflux/model/model_io.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::model {
namespace {

namespace fs = std::filesystem;

std::string digest_of(std::span<const float> values) {
  data::Sha256 sha;
  sha.update(std::as_bytes(values));
  return sha.finish_hex();
}

std::string parameter_path(const ParamInfo& info) {
  return "/params/" + info.name;
}

h5::Dims dims_of(const ParamInfo& info) {
  return {info.shape.begin(), info.shape.end()};
}

// The names of the output layer's tensors: those of the last layer with parameters ("layerN."
// prefix of the last parameter), its buffers included.
std::vector<std::string> output_tensors(const Model& model) {
  std::vector<std::string> names;
  if (model.param_infos().empty()) return names;
  const std::string& last = model.param_infos().back().name;
  const std::string prefix = last.substr(0, last.find('.') + 1);
  for (const ParamInfo& info : model.state_infos()) {
    if (info.name.starts_with(prefix)) names.push_back(info.name);
  }
  return names;
}

// Reads the parameter tensors of `file` into `staged` (the model's layout), except those in
// `skip`, checking that the file holds exactly the model's tensors with the model's shapes.
std::size_t read_parameters(const h5::File& file, const std::vector<ParamInfo>& infos,
                            const std::vector<std::string>& skip, std::vector<float>& staged) {
  const std::string& name = file.label();
  std::size_t loaded = 0, skipped_present = 0;
  for (const ParamInfo& info : infos) {
    const std::string path = parameter_path(info);
    if (std::ranges::find(skip, info.name) != skip.end()) {
      skipped_present += file.exists(path) ? 1 : 0;
      continue;
    }
    CONFLUX_REQUIRE(file.exists(path),
                    "{}: parameter {} is missing (the model has a different architecture)", name,
                    info.name);
    // Any float type converts: the file need not have been written by conflux.
    const h5::Dataset tensor = file.open_dataset<float>(path, {.convert = true});
    CONFLUX_REQUIRE(tensor.dims() == dims_of(info),
                    "{}: parameter {} has shape {} but the model expects {}", name, info.name,
                    h5::dims_string(tensor.dims()), h5::dims_string(dims_of(info)));
    tensor.read_into(std::span<float>(staged).subspan(info.offset, info.size));
    ++loaded;
  }
  const std::uint64_t tensors = file.link_count("/params");
  CONFLUX_REQUIRE(tensors == loaded + skipped_present,
                  "{} holds {} parameter tensors but the model has {} (a different architecture)",
                  name, tensors, infos.size());
  return loaded;
}

}  // namespace

std::string weights_digest(const Model& model) {
  return digest_of(model.state());
}

void save_model_hdf5(const fs::path& path, const Model& model) {
  publish_atomically(path, [&](const fs::path& temp) {
    h5::File file = h5::File::create(temp);
    file.create_group("/params");
    // Buffers (running statistics) are saved beside the parameters, as in a PyTorch
    // state_dict: evaluation needs them.
    const std::span<const float> params = model.state();
    for (const ParamInfo& info : model.state_infos()) {
      file.write(parameter_path(info), dims_of(info), params.data() + info.offset);
    }
    file.write_string_attribute("/", "digest", weights_digest(model),
                                h5::StringStorage::kVariableLength);
    // A dataset, not an attribute: an attribute holds at most 64 KB, a few thousand layers.
    const std::vector<std::string> layers = model.summary();
    const hsize_t count = layers.size();
    file.write_strings("/layers", std::span<const hsize_t>(&count, 1), layers);
    file.close();
  });  // the file is closed before it is synced and renamed
}

LoadReport load_model_hdf5(const fs::path& path, Model& model, const LoadOptions& options) {
  const h5::File file = h5::File::open(path, {.label = "model file " + path.string()});
  file.require_group("/params");
  LoadReport report;
  if (options.skip_output) report.skipped = output_tensors(model);
  // Read into a staging buffer so that a bad file leaves the model untouched; skipped tensors
  // keep the model's values.
  std::vector<float> staged(model.state().begin(), model.state().end());
  report.loaded = read_parameters(file, model.state_infos(), report.skipped, staged);
  if (report.skipped.empty() && file.has_attribute("/", "digest")) {
    CONFLUX_REQUIRE(file.read_string_attribute("/", "digest") == digest_of(staged),
                    "{}: the weights do not match the stored digest (corrupt file?)", file.label());
  }
  std::ranges::copy(staged, model.state().begin());
  return report;
}

}  // namespace conflux::model
