#pragma once
/// @file model_export.hpp
/// `conflux export`: a run's saved weights as an ONNX model, with an ONNX test data set (test
/// images after the evaluation transform and conflux's own logits for them) to check any
/// runtime that loads the model against conflux (docs/training.md, "Weights out: ONNX").
#include <cstddef>
#include <filesystem>
#include <string>

#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// What `conflux export` writes.
struct ExportJob {
  std::filesystem::path model_file;  ///< weights saved by a run (its model.h5)
  std::filesystem::path output;      ///< the ONNX file
  /// Test images in the data set beside the output (test_data_set_0/); 0 writes none.
  std::size_t test_samples = 0;
  std::string producer_version;  ///< conflux's version, recorded in the file
};

/// What was written.
struct ExportResult {
  std::string weights_digest;           ///< of the exported weights (model.h5's digest)
  std::size_t test_samples = 0;         ///< images in the test data set
  std::filesystem::path test_data_dir;  ///< empty when none was written
};

/// Builds the config's model, loads job.model_file into it and writes job.output (and the test
/// data set). InputError naming the file when the weights do not fit the model or a layer has
/// no ONNX equivalent; the previous output stays intact on any failure.
ExportResult run_export_job(const Config& config, const Logger& log, const ExportJob& job);

}  // namespace conflux::train
