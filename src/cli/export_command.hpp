#pragma once
// `conflux export`: a run's weights in a format other tools read (docs/training.md, "Weights
// out: ONNX").
#include <string>
#include <vector>

namespace conflux::cli {

/// Parses the arguments after `export`, writes the file (and its test data set) and prints
/// what it wrote; 0, or an Error (InputError: exit 2).
int cmd_export(const std::vector<std::string>& args);

}  // namespace conflux::cli
