#include "conflux/train/model_setup.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conflux/core/error.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/model_budget.hpp"

namespace conflux::train {

std::string load_weights(const std::string& origin, const std::filesystem::path& path,
                         model::Model& model, bool reset_output) {
  try {
    const model::LoadReport report =
        model::load_model_hdf5(path, model, {.skip_output = reset_output});
    std::string line =
        fmt::format("weights from {}: {} tensor(s) loaded", path.string(), report.loaded);
    if (!report.skipped.empty()) {
      line +=
          fmt::format("; output layer left as initialised ({})", fmt::join(report.skipped, ", "));
    }
    return line;
  } catch (const InputError& e) {
    CONFLUX_INPUT_ERROR("{}: {}", origin, e.what());  // e.what() names the file
  }
}

model::LayerOptions layer_options(const Config& config) {
  const std::string& kernels = config.train().conv_kernels;
  const bool onednn =
      kernels == "onednn" || (kernels == "auto" && !config.sources().portable_results);
  return {.conv = onednn ? model::ConvKernels::kOnednn : model::ConvKernels::kIm2col,
          .threads = config.cluster().blas_threads,
          .workspace = nullptr};
}

model::Model make_model(const Config& config, const data::SampleTransform& transform,
                        int num_classes, const Logger* log) {
  const data::ImageShape in = transform.output_shape();
  const ModelInput input{{in.channels, in.height, in.width}, num_classes};
  check_model_memory(config, input);  // before the model allocates anything
  model::Model model = [&] {
    try {
      return model::Model(config.layers(), input.shape, num_classes, config.run().seed,
                          layer_options(config));
    } catch (const InputError& e) {
      CONFLUX_INPUT_ERROR("{}: model.layers: {}", config.where("model.layers"), e.what());
    }
  }();
  const auto& t = config.train();
  if (!t.init_from.empty()) {
    const std::string origin = config.where("train.init_from") + ": train.init_from";
    const std::string line = load_weights(origin, t.init_from, model, t.init_reset_output);
    if (log != nullptr) log->info("{}", line);
  }
  return model;
}

}  // namespace conflux::train
