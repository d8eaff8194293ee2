#include "conflux/model/model_io.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/hdf5_file.hpp"
#include "conflux/core/sha256.hpp"

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

// Reads every parameter tensor of `file` into `staged` (the model's layout), checking that the
// file holds exactly the model's tensors with the model's shapes.
void read_parameters(const h5::File& file, const std::vector<ParamInfo>& infos,
                     std::vector<float>& staged) {
  const std::string& name = file.label();
  for (const ParamInfo& info : infos) {
    const std::string path = parameter_path(info);
    CONFLUX_REQUIRE(file.exists(path),
                    "{}: parameter {} is missing (the model has a different architecture)", name,
                    info.name);
    // Any float type converts: the file need not have been written by conflux.
    const h5::Dataset tensor = file.open_dataset<float>(path, {.convert = true});
    CONFLUX_REQUIRE(tensor.dims() == dims_of(info),
                    "{}: parameter {} has shape {} but the model expects {}", name, info.name,
                    h5::dims_string(tensor.dims()), h5::dims_string(dims_of(info)));
    tensor.read_into(std::span<float>(staged).subspan(info.offset, info.size));
  }
  const std::uint64_t tensors = file.link_count("/params");
  CONFLUX_REQUIRE(tensors == infos.size(), "{} holds {} parameter tensors but the model has {}",
                  name, tensors, infos.size());
}

}  // namespace

std::string weights_digest(const Model& model) {
  return digest_of(model.params());
}

void save_model_hdf5(const fs::path& path, const Model& model) {
  publish_atomically(path, [&](const fs::path& temp) {
    h5::File file = h5::File::create(temp);
    file.create_group("/params");
    const std::span<const float> params = model.params();
    for (const ParamInfo& info : model.param_infos()) {
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

void load_model_hdf5(const fs::path& path, Model& model) {
  const h5::File file = h5::File::open(path, {.label = "model file " + path.string()});
  file.require_group("/params");
  // Read into a staging buffer so that a bad file leaves the model untouched.
  std::vector<float> staged(model.params().size());
  read_parameters(file, model.param_infos(), staged);
  if (file.has_attribute("/", "digest")) {
    CONFLUX_REQUIRE(file.read_string_attribute("/", "digest") == digest_of(staged),
                    "{}: the weights do not match the stored digest (corrupt file?)", file.label());
  }
  std::ranges::copy(staged, model.params().begin());
}

}  // namespace conflux::model
