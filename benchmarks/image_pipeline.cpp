// conflux-bench image-pipeline: training samples/s of conflux's input pipeline on an image
// folder, on one thread, built the way training builds them: a data::BatchBuilder over a
// data::ImageFolderSource (read the file, decode_image, then the ImageNet-style training
// transform: random resized crop + horizontal flip + normalise, variable input shape), in
// batches in the order of the epoch plan. The figure is what one preprocessing thread gives a
// trainer. A second table splits one pass into its stages (read, decode, transform) on the same
// thread, to show where the time goes. benchmarks/image_pipeline_vs_pytorch.sh runs it beside
// torchvision's ImageFolder + DataLoader on the same files.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/io/image_codec.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/tensor.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSeed = 1;

struct PipelineArgs {
  std::string images;
  std::string split = "train";
  std::size_t samples = 0;  // 0: the whole split
  int batch = 64;
  int size = 224;
  int threads = 1;
  int repetitions = 3;
  int warmup = 1;
};

std::optional<po::variables_map> parse(const std::vector<std::string>& args, PipelineArgs& a,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options(
      "conflux-bench image-pipeline options (1 rank; read + decode + random resized crop + "
      "flip + normalise through data::BatchBuilder over an image folder)");
  options.add_options()("help,h", "show this help")(
      "images", po::value(&a.images)->required(),
      "image folder root (root/<split>/<class>/<file>.jpg|png), e.g. made by conflux-bench "
      "make-images --size 200-500")("split", po::value(&a.split)->default_value(a.split),
                                    "split folder under --images")(
      "samples", po::value(&a.samples)->default_value(a.samples),
      "samples built per timed pass (in batches, epoch after epoch of the plan); 0 = the whole "
      "split")("batch", po::value(&a.batch)->default_value(a.batch), "samples per batch")(
      "size", po::value(&a.size)->default_value(a.size),
      "transform.resized_crop: output side of the random resized crop")(
      "threads", po::value(&a.threads)->default_value(a.threads),
      "BatchBuilder preprocessing threads (1 = the per-core figure)")(
      "repetitions", po::value(&a.repetitions)->default_value(a.repetitions),
      "timed passes; the median is reported")("warmup",
                                              po::value(&a.warmup)->default_value(a.warmup),
                                              "untimed passes first (page cache, allocations)");
  auto vm = parse_scenario_options("image-pipeline", args, options, common, world);
  if (vm) {
    CONFLUX_REQUIRE(a.batch > 0 && a.size > 0 && a.threads > 0 && a.repetitions > 0,
                    "image-pipeline: --batch, --size, --threads and --repetitions must be "
                    "positive");
    CONFLUX_REQUIRE(a.warmup >= 0, "image-pipeline: --warmup must be at least 0");
  }
  return vm;
}

// ImageNet's training transform as conflux writes it (transform.resized_crop, hflip, mean/std).
data::TransformOptions imagenet_train_transform(int size) {
  data::TransformOptions o;
  o.resized_crop = size;
  o.hflip = true;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  return o;
}

// The dataset indices of `total` samples, epoch after epoch of the plan, cut into batches.
std::vector<std::vector<std::uint32_t>> plan_batches(std::size_t dataset, std::size_t total,
                                                     std::size_t batch,
                                                     std::vector<std::uint32_t>& epochs) {
  std::vector<std::vector<std::uint32_t>> batches;
  for (std::uint32_t epoch = 0; total > 0; ++epoch) {
    const data::EpochPlan plan(kSeed, epoch, dataset, batch, 1);
    for (std::size_t s = 0; s < plan.steps() && total > 0; ++s) {
      const auto samples = plan.samples(s, 0);
      const std::size_t n = std::min(samples.size(), total);
      batches.emplace_back(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(n));
      epochs.push_back(epoch);
      total -= n;
    }
  }
  return batches;
}

// Seconds of one pass over `indices` on this thread, stage by stage: each sample is read,
// decoded and transformed in turn into reused buffers (as BatchBuilder does), with the clock
// read between the stages.
struct StageSeconds {
  double read = 0, decode = 0, transform = 0;
  double pixels = 0;  // decoded pixels per image, mean
};

StageSeconds time_stages(const data::ImageFolderSource& source,
                         const data::SampleTransform& transform,
                         const std::vector<std::uint32_t>& indices) {
  StageSeconds s;
  std::vector<std::uint8_t> file;
  data::DecodedImage decoded;
  std::vector<float> out(transform.output_shape().size());
  for (const std::uint32_t i : indices) {
    const auto t0 = Clock::now();
    source.read(i, file);
    const auto t1 = Clock::now();
    data::decode_image(file, {.channels = 3}, source.where(i), decoded);
    const auto t2 = Clock::now();
    transform.train({decoded.shape, decoded.pixels}, kSeed, 0, i, out.data());
    const auto t3 = Clock::now();
    s.read += std::chrono::duration<double>(t1 - t0).count();
    s.decode += std::chrono::duration<double>(t2 - t1).count();
    s.transform += std::chrono::duration<double>(t3 - t2).count();
    s.pixels += static_cast<double>(decoded.shape.height) * decoded.shape.width;
  }
  s.pixels /= static_cast<double>(std::max<std::size_t>(1, indices.size()));
  return s;
}

}  // namespace

int run_image_pipeline(const std::vector<std::string>& args, const comm::Communicator& world) {
  if (world.rank() != 0) return 0;
  PipelineArgs a;
  CommonOptions common;
  const auto vm = parse(args, a, common, world);
  if (!vm) return 0;
  const data::ImageFolderSource source(a.images, a.split, 3);
  const std::size_t total = a.samples > 0 ? a.samples : source.size();
  const data::SampleTransform transform(imagenet_train_transform(a.size), {3, 0, 0});
  data::BatchBuilder builder(source, transform, a.threads);
  std::vector<std::uint32_t> epochs;
  const auto batches =
      plan_batches(source.size(), total, static_cast<std::size_t>(a.batch), epochs);
  fmt::print(
      "image-pipeline: {} samples per pass from {} ({} images), batches of {}, {} thread(s): "
      "read + decode_image + random resized crop {} + flip + normalise (data::BatchBuilder)\n\n",
      total, source.where(0).substr(0, source.where(0).rfind('/')), source.size(), a.batch,
      a.threads, a.size);

  model::Tensor images;
  std::vector<model::Label> labels;
  std::vector<double> rates;
  for (int pass = -a.warmup; pass < a.repetitions; ++pass) {
    const auto start = Clock::now();
    for (std::size_t b = 0; b < batches.size(); ++b) {
      builder.build_train(batches[b], kSeed, epochs[b], images, labels);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (pass >= 0) rates.push_back(static_cast<double>(total) / seconds);
  }
  const double rate = median(rates);
  const double per_core = rate / a.threads;

  std::vector<std::uint32_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  const StageSeconds st = time_stages(source, transform, all);
  const double n = static_cast<double>(all.size());

  Report report("image-pipeline", common);
  report.add_parameters(*vm);
  std::string per_rep;
  for (const double r : rates) per_rep += fmt::format("{}{:.1f}", per_rep.empty() ? "" : " ", r);
  Table& table = report.add_table(Table(
      "throughput",
      fmt::format("training samples from an image folder, batches of {}, {} thread(s), median "
                  "of {} passes of {} samples",
                  a.batch, a.threads, a.repetitions, total),
      {"pipeline", {"samples/s", 1}, {"samples/s per core", 1}, {"us/sample", 0}, "passes"}));
  table.add_row(
      {fmt::format("BatchBuilder: read + decode + resized crop {} + flip + normalise", a.size),
       rate, per_core, 1e6 / rate, fmt::format("[{}]", per_rep)});
  table.print();
  fmt::print("\n");
  const double stage_total = st.read + st.decode + st.transform;
  Table& stages = report.add_table(
      Table("stages",
            fmt::format("one pass, stage by stage on this thread ({} samples, decoded images "
                        "{:.0f} px on average)",
                        all.size(), st.pixels),
            {"stage", {"us/sample", 1}, {"% of the stages", 1}}));
  stages.add_row(
      {"read the file (ImageFolderSource::read)", 1e6 * st.read / n, 100 * st.read / stage_total});
  stages.add_row(
      {"decode (decode_image, full size)", 1e6 * st.decode / n, 100 * st.decode / stage_total});
  stages.add_row({fmt::format("transform (resized crop {} + flip + normalise)", a.size),
                  1e6 * st.transform / n, 100 * st.transform / stage_total});
  stages.add_row({"sum", 1e6 * stage_total / n, 100.0});
  stages.print();
  report.set_summary("samples_per_pass", total);
  report.set_summary("samples_per_s", rate);
  report.set_summary("samples_per_s_per_core", per_core);
  report.set_summary("read_us", 1e6 * st.read / n);
  report.set_summary("decode_us", 1e6 * st.decode / n);
  report.set_summary("transform_us", 1e6 * st.transform / n);
  report.set_plot(Plot{
      .title = stages.title(),
      .xlabel = "stage",
      .ylabel = "us per sample (1 thread)",
      .categories = {"read", "decode", "transform"},
      .series = {Series{.title = "us/sample",
                        .y = {1e6 * st.read / n, 1e6 * st.decode / n, 1e6 * st.transform / n}}}});
  report.write();
  return 0;
}

}  // namespace conflux::bench
