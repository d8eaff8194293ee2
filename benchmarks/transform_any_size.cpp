// conflux-bench transforms-any-size: images/s of the ImageNet-style transforms on images of
// varying size (random resized crop + flip + normalise for training, resize + centre crop +
// normalise for evaluation), one thread, on synthetic uint8 images. The decode is not part of
// it: this is the transform's share of a decode + transform pipeline.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace po = boost::program_options;

struct AnySizeArgs {
  std::size_t samples = 2000;
  std::size_t images = 64;
  int min_side = 200;
  int max_side = 500;
  int channels = 3;
  int size = 224;
  int repetitions = 5;
};

// Returns nothing when --help was answered.
std::optional<po::variables_map> parse(const std::vector<std::string>& args, AnySizeArgs& out,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options("conflux-bench transforms-any-size options");
  options.add_options()("help,h", "show this help")(
      "samples", po::value(&out.samples)->default_value(out.samples),
      "samples transformed per repetition (cycling over the images)")(
      "images", po::value(&out.images)->default_value(out.images),
      "distinct synthetic images, each of a random size")(
      "min-side", po::value(&out.min_side)->default_value(out.min_side),
      "smallest image height or width")("max-side",
                                        po::value(&out.max_side)->default_value(out.max_side),
                                        "largest image height or width")(
      "channels", po::value(&out.channels)->default_value(out.channels), "1 or 3")(
      "size", po::value(&out.size)->default_value(out.size),
      "transform.resized_crop (output side)")(
      "repetitions", po::value(&out.repetitions)->default_value(out.repetitions),
      "timed repetitions; the median is reported");
  auto vm = parse_scenario_options("transforms-any-size", args, options, common, world);
  if (vm) {
    CONFLUX_REQUIRE(out.samples > 0 && out.images > 0 && out.repetitions > 0,
                    "transforms-any-size: --samples, --images and --repetitions must be positive");
    CONFLUX_REQUIRE(out.min_side > 0 && out.min_side <= out.max_side,
                    "transforms-any-size: need 0 < --min-side <= --max-side");
    CONFLUX_REQUIRE(out.channels == 1 || out.channels == 3,
                    "transforms-any-size: --channels must be 1 or 3");
    CONFLUX_REQUIRE(out.size > 0, "transforms-any-size: --size must be positive");
  }
  return vm;
}

// Images of random sizes in [min_side, max_side]^2 with noisy gradients (content does not
// change the cost; the sizes do).
std::vector<std::vector<std::uint8_t>> make_images(const AnySizeArgs& a,
                                                   std::vector<data::ImageShape>& shapes) {
  Rng rng{20240611};
  const auto side = [&] {
    return a.min_side +
           static_cast<int>(rng.below(static_cast<std::uint64_t>(a.max_side - a.min_side + 1)));
  };
  std::vector<std::vector<std::uint8_t>> images;
  for (std::size_t i = 0; i < a.images; ++i) {
    const data::ImageShape shape{a.channels, side(), side()};
    std::vector<std::uint8_t> pixels(shape.size());
    for (std::size_t p = 0; p < pixels.size(); ++p)
      pixels[p] = static_cast<std::uint8_t>(p / 7 + rng.below(32));
    shapes.push_back(shape);
    images.push_back(std::move(pixels));
  }
  return images;
}

// Median images/s of `repetitions` timed passes of `samples` calls of `one(i)`.
double images_per_second(const AnySizeArgs& a, const std::function<void(std::size_t)>& one) {
  std::vector<double> rates;
  // Repetition -1 is untimed: it faults in the images and the thread's scratch buffers.
  for (int r = -1; r < a.repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < a.samples; ++i) one(i);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (r >= 0) rates.push_back(static_cast<double>(a.samples) / elapsed.count());
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int run_transform_any_size(const std::vector<std::string>& args, const comm::Communicator& world) {
  if (world.rank() != 0) return 0;
  AnySizeArgs a;
  CommonOptions common;
  const auto vm = parse(args, a, common, world);
  if (!vm) return 0;
  std::vector<data::ImageShape> shapes;
  const auto images = make_images(a, shapes);

  data::TransformOptions options;
  options.resized_crop = a.size;
  options.hflip = true;
  // ImageNet channel statistics; the values do not change the cost.
  options.mean =
      a.channels == 3 ? std::vector<float>{0.485f, 0.456f, 0.406f} : std::vector<float>{0.449f};
  options.std =
      a.channels == 3 ? std::vector<float>{0.229f, 0.224f, 0.225f} : std::vector<float>{0.226f};
  const data::SampleTransform transform(options, {a.channels, 0, 0});
  std::vector<float> out(transform.output_shape().size());
  const auto view = [&](std::size_t i) {
    const std::size_t k = i % images.size();
    return data::ImageView{shapes[k], images[k]};
  };
  const double train =
      images_per_second(a, [&](std::size_t i) { transform.train(view(i), 42, 1, i, out.data()); });
  const double eval =
      images_per_second(a, [&](std::size_t i) { transform.eval(view(i), out.data()); });

  Report report("transforms-any-size", common);
  report.add_parameters(*vm);
  Table& table = report.add_table(Table(
      "throughput",
      fmt::format("transforms on {} images of {}..{} px per side, {} channel(s), output {}x{}, "
                  "1 thread, median of {}",
                  a.images, a.min_side, a.max_side, a.channels, a.size, a.size, a.repetitions),
      {"transform", {"images/s", 0}, {"us/image", 1}}));
  table.add_row({fmt::format("train: random resized crop {} + flip + normalise", a.size), train,
                 1e6 / train});
  table.add_row({fmt::format("eval: resize to {} + centre crop {} + normalise",
                             transform.eval_short_side(), a.size),
                 eval, 1e6 / eval});
  table.print();
  report.set_summary("train_images_per_s", train);
  report.set_summary("eval_images_per_s", eval);
  report.set_plot(Plot{.title = table.title(),
                       .xlabel = "transform",
                       .ylabel = "images/s (1 thread)",
                       .categories = {"train", "eval"},
                       .series = {Series{.title = "images/s", .y = table.numbers("images/s")}}});
  report.write();
  return 0;
}

}  // namespace conflux::bench
