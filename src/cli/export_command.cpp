// `conflux export`: a run's weights in a format other tools read (docs/training.md, "Weights
// out: ONNX").

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <iostream>

#include "command.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/log.hpp"
#include "conflux/model/onnx_export.hpp"
#include "conflux/train/model_export.hpp"
#include "version.hpp"
#include "weights_options.hpp"

namespace conflux::cli {

namespace po = boost::program_options;

namespace {

int run_export(const Invocation& inv) {
  WeightsOptions weights;
  train::ExportJob job;
  job.test_samples = 16;
  job.producer_version = kVersion;
  std::string format = "onnx";
  po::options_description options("conflux export options");
  options.add_options()("help,h", "show this help");
  add_weights_options(options, weights);
  options.add_options()("format,f", po::value(&format), "onnx (the only format so far)")(
      "output,o", po::value(&job.output)->required(), "the file to write, e.g. model.onnx")(
      "test-samples", po::value(&job.test_samples),
      "test images (after the evaluation transform) and conflux's logits for them, written as "
      "an ONNX test data set in test_data_set_0/ beside the output; 0: none (default 16)");
  if (!parse_options(inv, options)) return 0;
  CONFLUX_REQUIRE(format == "onnx", "conflux export --format: onnx is the only format, not '{}'",
                  format);
  const Logger log;
  job.model_file = weights.model_file;
  const Config config = load_config_file(
      weights.config_path, environment_sources(weights.overrides, local_time("%Y%m%d-%H%M%S")));
  const train::ExportResult r = train::run_export_job(config, log, job);
  fmt::print("wrote {} (ONNX opset {}, weights digest {})\n", job.output.string(),
             model::kOnnxOpset, r.weights_digest);
  if (r.test_samples > 0) {
    fmt::print("wrote {} test images and conflux's logits for them in {}\n", r.test_samples,
               r.test_data_dir.string());
  }
  return 0;
}

}  // namespace

const Command& export_command() {
  static const Command command{
      .name = "export",
      .usage =
          "conflux export --model FILE.h5 --config FILE --output MODEL.onnx "
          "[--test-samples N]",
      .summary = "the weights as an ONNX model, with an ONNX test data set",
      .help =
          "Writes the weights of a run (its model.h5) with the config's network as an ONNX "
          "model (opset 13) for ONNX Runtime, TensorRT or OpenVINO, and beside it a test data "
          "set: test images and conflux's logits for them. docs/training.md, \"Weights out: "
          "ONNX\".",
      .run = run_export};
  return command;
}

}  // namespace conflux::cli
