#pragma once
/// @file model_io.hpp
/// Saving and loading model weights as HDF5 and the bit-exact weight digest.

#include <filesystem>
#include <string>
#include <vector>

#include "conflux/model/model.hpp"

namespace conflux::model {

/// SHA-256 (hex) of the raw bytes of Model::state() (parameters, then buffers such as running
/// statistics); equal digests mean bit-identical weights.
std::string weights_digest(const Model& model);

/// Writes one float dataset per tensor of Model::state() (/params/<name>, its shape) plus root
/// attributes "digest" and "layers" (the summary lines), atomically (temp file + rename).
void save_model_hdf5(const std::filesystem::path& path, const Model& model);

/// What load_model_hdf5 may leave out.
struct LoadOptions {
  /// Keep the output layer (the last layer with parameters) as initialised instead of loading
  /// it: fine-tuning on another number of classes. The file may hold it with any shape.
  bool skip_output = false;
};

/// What load_model_hdf5 loaded.
struct LoadReport {
  std::size_t loaded = 0;            ///< parameter tensors read from the file
  std::vector<std::string> skipped;  ///< left as initialised (LoadOptions::skip_output)
};

/// Loads parameters saved by save_model_hdf5 into `model`. InputError (naming the file and
/// parameter) when a tensor is missing, its shape differs or the file holds tensors the model
/// has not; `model` is unchanged then.
LoadReport load_model_hdf5(const std::filesystem::path& path, Model& model,
                           const LoadOptions& options = {});

}  // namespace conflux::model
