// conflux-bench transforms: what each augmentation costs per sample on one core, so that the
// offload ratio of the data service can be judged against a model step.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/catalog.hpp"
#include "conflux/data/transforms.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace po = boost::program_options;

struct CostArgs {
  std::size_t samples = 2000;
  std::string dataset = "cifar10";
  std::string data_dir = "../shared/data";
};

// Returns false when --help was answered.
bool parse(const std::vector<std::string>& args, CostArgs& out) {
  po::options_description options("conflux-bench transforms options");
  options.add_options()("help,h", "show this help")(
      "samples", po::value(&out.samples)->default_value(out.samples),
      "training samples transformed per repetition")(
      "dataset", po::value(&out.dataset)->default_value(out.dataset),
      "mnist, fashion-mnist or cifar10")("data-dir",
                                         po::value(&out.data_dir)->default_value(out.data_dir),
                                         "directory holding mnist/, fashion-mnist/ and cifar-10/");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    CONFLUX_INPUT_ERROR("transforms: {} (see conflux-bench transforms --help)", e.what());
  }
  if (vm.count("help")) {
    std::cout << options;
    return false;
  }
  CONFLUX_REQUIRE(out.samples > 0, "transforms: --samples must be positive");
  return true;
}

struct Case {
  std::string name;
  std::function<void(data::TransformOptions&)> enable;
};

// Per-sample cost of one configuration: median of `repetitions` passes over the first
// `samples` images, so a stray context switch does not move the figure.
double microseconds_per_sample(const data::SampleTransform& transform, const data::Dataset& split,
                               std::size_t samples, int repetitions) {
  std::vector<float> out(transform.output_shape().size());
  std::vector<double> times;
  // Repetition -1 is untimed: it faults in the images and the thread's scratch buffers.
  for (int r = -1; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < samples; ++i)
      transform.train(split.image(i), 42, static_cast<std::uint32_t>(r + 1), i, out.data());
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
  if (!parse(args, cost)) return 0;
  const data::DatasetSplits splits = data::load_dataset(cost.dataset, cost.data_dir);
  const data::Dataset& train = splits.train;
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
  fmt::print("transform cost: {} train, {} samples, {}x{}x{}, 1 thread, median of {}\n",
             cost.dataset, samples, shape.channels, shape.height, shape.width, kRepetitions);
  fmt::print("{:<28} {:>10} {:>17}\n", "transform", "us/sample", "+us vs normalise");
  double baseline = 0.0;
  for (const Case& c : cases) {
    data::TransformOptions options = base;
    c.enable(options);
    const data::SampleTransform transform(options, shape);
    const double us = microseconds_per_sample(transform, train, samples, kRepetitions);
    if (&c == &cases.front()) baseline = us;
    fmt::print("{:<28} {:>10.3f} {:>+17.3f}\n", c.name, us, us - baseline);
  }
  return 0;
}

}  // namespace conflux::bench
