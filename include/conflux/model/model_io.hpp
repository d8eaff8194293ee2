#pragma once
/// @file model_io.hpp
/// Saving and loading model weights as HDF5 and the bit-exact weight digest.

#include <filesystem>
#include <string>

#include "conflux/model/model.hpp"

namespace conflux::model {

/// SHA-256 (hex) of the raw bytes of all parameters in buffer order; equal digests mean
/// bit-identical weights.
std::string weights_digest(const Model& model);

/// Writes one float dataset per parameter tensor (/params/<name>, its shape) plus root
/// attributes "digest" and "layers" (the summary lines), atomically (temp file + rename).
void save_model_hdf5(const std::filesystem::path& path, const Model& model);

/// Loads parameters saved by save_model_hdf5 into `model`. InputError (naming the file and
/// parameter) when a tensor is missing or its shape differs.
void load_model_hdf5(const std::filesystem::path& path, Model& model);

}  // namespace conflux::model
