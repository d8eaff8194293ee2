#include "conflux/train/model_export.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/model/onnx_export.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

namespace fs = std::filesystem;

// What a user of the ONNX file needs to feed it and to read its output, and where it came from.
std::vector<std::pair<std::string, std::string>> export_metadata(const Config& config,
                                                                 const model::Model& model,
                                                                 const data::SourceInfo& info) {
  const auto& t = config.transform();
  return {
      {"conflux.weights_digest", model::weights_digest(model)},
      {"conflux.dataset", config.data().dataset},
      {"conflux.classes", fmt::format("{}", fmt::join(info.class_names, ","))},
      {"conflux.input", fmt::format("float32 [batch,{}]: 8-bit pixels / 255, then per channel "
                                    "(x - mean) / std; the evaluation transform of the config",
                                    fmt::join(model.input_shape(), ","))},
      {"conflux.normalize.mean", fmt::format("{}", fmt::join(t.mean, ","))},
      {"conflux.normalize.std", fmt::format("{}", fmt::join(t.std, ","))},
      {"conflux.layers", fmt::format("{}", fmt::join(model.summary(), "\n"))},
  };
}

// The first `count` test images after the evaluation transform, and conflux's logits for them:
// an ONNX test data set (input_0.pb, output_0.pb), the layout of ONNX's own backend tests.
fs::path write_test_data(const Config& config, const data::SampleSource& test,
                         const data::SampleTransform& transform, model::Model& model,
                         std::size_t count, const fs::path& dir) {
  data::BatchBuilder builder(test, transform, config.cluster().preprocess_threads,
                             sample_decoding(config, nullptr));
  model::Tensor images;
  std::vector<model::Label> labels;
  builder.build_eval(0, count, images, labels);
  const model::Tensor& logits = model.forward(images);
  fs::create_directories(dir);
  model::write_onnx_tensor(dir / "input_0.pb", "input", images);
  model::write_onnx_tensor(dir / "output_0.pb", "logits", logits);
  return dir;
}

}  // namespace

ExportResult run_export_job(const Config& config, const Logger& log, const ExportJob& job) {
  const data::SourceSplits data = open_training_data(config);
  const data::SampleTransform transform = make_transform(config, *data.train);
  const data::SourceInfo& info = data.train->info();
  model::Model model = make_model(config, transform, info.num_classes, nullptr);
  log.info("{}", load_weights("conflux export --model", job.model_file, model, false));
  if (job.output.has_parent_path()) fs::create_directories(job.output.parent_path());
  ExportResult result;
  result.weights_digest = model::weights_digest(model);
  model::write_onnx_model(job.output, model,
                          {.producer_version = job.producer_version,
                           .graph_name = config.run().name,
                           .metadata = export_metadata(config, model, info)});
  if (job.test_samples > 0) {
    result.test_samples = std::min(job.test_samples, data.test->size());
    CONFLUX_REQUIRE(result.test_samples > 0,
                    "conflux export --test-samples: the test split of "
                    "{} is empty",
                    config.data().dataset);
    const fs::path dir = job.output.parent_path() / "test_data_set_0";
    result.test_data_dir =
        write_test_data(config, *data.test, transform, model, result.test_samples, dir);
  }
  return result;
}

}  // namespace conflux::train
