#include "conflux/model/model_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <system_error>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/hdf5.hpp"
#include "conflux/core/sha256.hpp"

namespace conflux::model {
namespace {

namespace fs = std::filesystem;

std::string digest_of(std::span<const float> values) {
  data::Sha256 sha;
  sha.update(std::as_bytes(values));
  return sha.finish_hex();
}

std::string shape_string(std::span<const hsize_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

}  // namespace

std::string weights_digest(const Model& model) {
  return digest_of(model.params());
}

void save_model_hdf5(const fs::path& path, const Model& model) {
  const auto hdf5_lock = h5::lock_library();
  h5::silence_error_stack();
  publish_atomically(path, [&](const fs::path& temp) {
    const hid_t id = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CONFLUX_CHECK(id >= 0, "cannot create model file {}", temp.string());
    const h5::Handle file(id, "create the model file");
    const h5::Handle group(H5Gcreate2(file.get(), "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           "create group /params");
    const std::span<const float> params = model.params();
    for (const ParamInfo& info : model.param_infos()) {
      std::vector<hsize_t> dims(info.shape.begin(), info.shape.end());
      const h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                             "create a parameter dataspace");
      const h5::Handle dset(H5Dcreate2(group.get(), info.name.c_str(), H5T_IEEE_F32LE, space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                            "create a parameter dataset");
      CONFLUX_H5_CHECK(H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                params.data() + info.offset));
    }
    h5::write_string_attribute(file.get(), "digest", weights_digest(model));
    h5::write_strings_attribute(file.get(), "layers", model.summary());
    CONFLUX_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_LOCAL));
  });  // every handle is closed when the writer returns, before the file is synced and renamed
}

void load_model_hdf5(const fs::path& path, Model& model) {
  const auto hdf5_lock = h5::lock_library();
  h5::silence_error_stack();
  const std::string file_name = path.string();
  std::error_code ec;
  CONFLUX_REQUIRE(fs::is_regular_file(path, ec), "model file {} does not exist", file_name);
  CONFLUX_REQUIRE(H5Fis_hdf5(path.c_str()) > 0, "model file {} is not an HDF5 file", file_name);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  CONFLUX_REQUIRE(id >= 0, "cannot open model file {}", file_name);
  const h5::Handle file(id, "open the model file");
  CONFLUX_REQUIRE(H5Lexists(file.get(), "params", H5P_DEFAULT) > 0,
                  "model file {} has no /params group", file_name);
  const h5::Handle group(H5Gopen2(file.get(), "params", H5P_DEFAULT), "open group /params");

  // Read into a staging buffer so that a bad file leaves the model untouched.
  const std::vector<ParamInfo>& infos = model.param_infos();
  std::vector<float> staged(model.params().size());
  for (const ParamInfo& info : infos) {
    CONFLUX_REQUIRE(H5Lexists(group.get(), info.name.c_str(), H5P_DEFAULT) > 0,
                    "model file {}: parameter {} is missing (the model has a different "
                    "architecture)",
                    file_name, info.name);
    const h5::Handle dset(H5Dopen2(group.get(), info.name.c_str(), H5P_DEFAULT),
                          "open a parameter dataset");
    const h5::Handle type(H5Dget_type(dset.get()), "get a parameter type");
    CONFLUX_REQUIRE(H5Tget_class(type.get()) == H5T_FLOAT,
                    "model file {}: parameter {} is not a float dataset", file_name, info.name);
    const h5::Handle space(H5Dget_space(dset.get()), "get a parameter dataspace");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    CONFLUX_H5_CHECK(rank);
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    CONFLUX_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
    const std::vector<hsize_t> expected(info.shape.begin(), info.shape.end());
    CONFLUX_REQUIRE(dims == expected,
                    "model file {}: parameter {} has shape {} but the model expects {}", file_name,
                    info.name, shape_string(dims), shape_string(expected));
    CONFLUX_H5_CHECK(H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             staged.data() + info.offset));
  }
  H5G_info_t group_info;
  CONFLUX_H5_CHECK(H5Gget_info(group.get(), &group_info));
  CONFLUX_REQUIRE(group_info.nlinks == infos.size(),
                  "model file {} holds {} parameter tensors but the model has {}", file_name,
                  group_info.nlinks, infos.size());
  if (H5Aexists(file.get(), "digest") > 0) {
    const std::string stored = h5::read_string_attribute(file.get(), "digest");
    CONFLUX_REQUIRE(stored == digest_of(staged),
                    "model file {}: the weights do not match the stored digest (corrupt file?)",
                    file_name);
  }
  std::ranges::copy(staged, model.params().begin());
}

}  // namespace conflux::model
