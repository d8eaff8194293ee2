#pragma once
/// @file onnx_export.hpp
/// The trained network as an ONNX model (inference elsewhere: ONNX Runtime, TensorRT, PyTorch),
/// and tensors in ONNX's test-data format (docs/training.md, "Weights out: ONNX").
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "conflux/config/layer_spec.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::model {

/// The ONNX operator-set version the export writes (every operator it uses is unchanged from
/// opset 13 on; ONNX Runtime and PyTorch read it).
inline constexpr int kOnnxOpset = 13;

/// What goes into the ONNX file besides the network.
struct OnnxExportOptions {
  std::string producer_version;  ///< conflux's version, in producer_version
  std::string graph_name;        ///< e.g. the run's name
  /// metadata_props: what a user of the file needs to feed it (the input normalisation, the
  /// dataset, the classes) and where it came from (the weights' digest).
  std::vector<std::pair<std::string, std::string>> metadata;
};

/// Writes `model` as an ONNX model: input "input" [batch, input shape...], output "logits"
/// [batch, classes], one node per layer in execution order (Gemm, Conv, MaxPool, AveragePool,
/// BatchNormalization, Sum, Concat, Relu, Flatten, Identity for dropout; globalavgpool is
/// GlobalAveragePool + Flatten), the weights and running statistics as initializers named as
/// in model.h5. Published atomically; InputError for a layer ONNX cannot express, RuntimeError
/// when the file cannot be written.
void write_onnx_model(const std::filesystem::path& path, const Model& model,
                      const OnnxExportOptions& options);

/// Writes `tensor` as a serialized ONNX TensorProto named `name` (the input_0.pb / output_0.pb
/// files of an ONNX test data set), published atomically.
void write_onnx_tensor(const std::filesystem::path& path, const std::string& name,
                       const Tensor& tensor);

}  // namespace conflux::model
