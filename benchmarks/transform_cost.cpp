// conflux-bench transforms: what each augmentation costs per sample on one core, so that the
// offload ratio of the data service can be judged against a model step.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace po = boost::program_options;

struct CostArgs {
  std::size_t samples = 2000;
  std::string dataset = "cifar10";
  std::string data_dir = environment_data_dir();  // as conflux: $CONFLUX_DATA, else per-user
};

// Returns nothing when --help was answered.
std::optional<po::variables_map> parse(const std::vector<std::string>& args, CostArgs& out,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options("conflux-bench transforms options");
  options.add_options()("help,h", "show this help")(
      "samples", po::value(&out.samples)->default_value(out.samples),
      "training samples transformed per repetition")(
      "dataset", po::value(&out.dataset)->default_value(out.dataset),
      "mnist, fashion-mnist or cifar10")("data-dir",
                                         po::value(&out.data_dir)->default_value(out.data_dir),
                                         "directory holding mnist/, fashion-mnist/ and cifar-10/");
  auto vm = parse_scenario_options("transforms", args, options, common, world);
  if (vm) CONFLUX_REQUIRE(out.samples > 0, "transforms: --samples must be positive");
  return vm;
}

struct Case {
  std::string name;
  std::function<void(data::TransformOptions&)> enable;
};

// Per-sample cost of one configuration: median of `repetitions` passes over the first
// `samples` images, so a stray context switch does not move the figure.
double microseconds_per_sample(const data::SampleTransform& transform,
                               const data::InMemorySplit& split, std::size_t samples,
                               int repetitions) {
  std::vector<float> out(transform.output_shape().size());
  std::vector<double> times;
  // Repetition -1 is untimed: it faults in the images and the thread's scratch buffers.
  for (int r = -1; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < samples; ++i)
      transform.train({split.shape, split.image(i)}, 42, static_cast<std::uint32_t>(r + 1), i,
                      out.data());
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    if (r >= 0) times.push_back(elapsed.count() / static_cast<double>(samples));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int run_transform_cost(const std::vector<std::string>& args, const comm::Communicator& world) {
  if (world.rank() != 0) return 0;
  CostArgs cost;
  CommonOptions common;
  const auto vm = parse(args, cost, common, world);
  if (!vm) return 0;
  const data::InMemorySplits splits = data::load_dataset(cost.dataset, cost.data_dir);
  const data::InMemorySplit& train = splits.train;
  const std::size_t samples = std::min(cost.samples, train.size());
  const data::ImageShape shape = train.shape;
  const int side = std::min(shape.height, shape.width);

  data::TransformOptions base;
  // CIFAR-10 channel statistics; the values do not change the cost, only the channel count.
  base.mean = shape.channels == 3 ? std::vector<float>{0.4914f, 0.4822f, 0.4465f}
                                  : std::vector<float>{0.1307f};
  base.std = shape.channels == 3 ? std::vector<float>{0.2470f, 0.2435f, 0.2616f}
                                 : std::vector<float>{0.3081f};
  const std::vector<Case> cases = {
      {"normalise only", [](auto&) {}},
      {"pad 4 + crop + hflip",
       [&](auto& o) {
         o.pad = 4;
         o.crop = side;
         o.hflip = true;
       }},
      {fmt::format("resized_crop {}", side), [&](auto& o) { o.resized_crop = side; }},
      {"rotation 15", [](auto& o) { o.rotation_degrees = 15; }},
      {"colour jitter 0.4/0.4/0.4",
       [](auto& o) { o.brightness = o.contrast = o.saturation = 0.4f; }},
      {"blur k5 p=1",
       [](auto& o) {
         o.blur_kernel = 5;
         o.blur_probability = 1;
       }},
      {"cutout 8", [](auto& o) { o.cutout_size = 8; }},
      {"full heavy pipeline",
       [&](auto& o) {
         o.resized_crop = side;
         o.hflip = true;
         o.rotation_degrees = 15;
         o.brightness = o.contrast = o.saturation = 0.4f;
         o.blur_kernel = 5;
         o.blur_probability = 1;
         o.cutout_size = 8;
       }},
  };

  constexpr int kRepetitions = 5;
  Report report("transforms", common);
  report.add_parameters(*vm);
  report.set_parameter("repetitions", kRepetitions);
  Table& table = report.add_table(Table(
      "cost",
      fmt::format("transform cost: {} train, {} samples, {}x{}x{}, 1 thread, median of {}",
                  cost.dataset, samples, shape.channels, shape.height, shape.width, kRepetitions),
      {"transform", {"us/sample", 3}, {"+us vs normalise", 3}}));
  double baseline = 0.0;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    data::TransformOptions options = base;
    c.enable(options);
    const data::SampleTransform transform(options, shape);
    const double us = microseconds_per_sample(transform, train, samples, kRepetitions);
    if (&c == &cases.front()) baseline = us;
    table.add_row({c.name, us, us - baseline});
    names.push_back(c.name);
  }
  table.print();
  report.set_plot(Plot{.title = table.title(),
                       .xlabel = "transform",
                       .ylabel = "us per sample (1 thread)",
                       .categories = names,
                       .series = {Series{.title = "us/sample", .y = table.numbers("us/sample")}}});
  report.write();
  return 0;
}

}  // namespace conflux::bench
