#include "conflux/data/transforms.hpp"

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"

namespace conflux::data {

namespace {
constexpr std::uint64_t kAugmentStream = 0x6175676d;  // "augm"

float per_channel(const std::vector<float>& values, int c) {
  return values.size() == 1 ? values[0] : values[static_cast<std::size_t>(c)];
}
}  // namespace

SampleTransform::SampleTransform(const TransformOptions& options, ImageShape input)
    : options_(options), input_(input), output_(input) {
  const int padded_h = input.height + 2 * options.pad;
  const int padded_w = input.width + 2 * options.pad;
  if (options.crop > 0) {
    CONFLUX_REQUIRE(options.crop <= padded_h && options.crop <= padded_w,
                    "transform.crop = {} is larger than the padded image ({}x{} with "
                    "transform.pad = {})",
                    options.crop, padded_h, padded_w, options.pad);
    output_.height = output_.width = options.crop;
  } else {
    CONFLUX_REQUIRE(options.pad == 0,
                    "transform.pad = {} needs transform.crop (the crop brings the padded image "
                    "back to a fixed size)",
                    options.pad);
  }
  for (const auto* values : {&options.mean, &options.std}) {
    CONFLUX_REQUIRE(
        values->size() == 1 || values->size() == static_cast<std::size_t>(input.channels),
        "transform.{} has {} values but the images have {} channel(s); give 1 or {}",
        values == &options.mean ? "mean" : "std", values->size(), input.channels, input.channels);
  }
  for (int c = 0; c < input.channels; ++c) {
    const float sd = per_channel(options.std, c);
    scale_.push_back(1.0f / (255.0f * sd));
    shift_.push_back(-per_channel(options.mean, c) / sd);
  }
}

void SampleTransform::train(std::span<const std::uint8_t> image, std::uint64_t seed,
                            std::uint32_t epoch, std::uint64_t sample_index, float* out) const {
  // Draw order is fixed (crop offsets, then flip) so that the numbers are the same everywhere.
  Rng rng{seed, kAugmentStream, epoch, sample_index};
  int top = 0, left = 0;
  if (options_.crop > 0) {
    top = static_cast<int>(rng.below(input_.height + 2 * options_.pad - output_.height + 1)) -
          options_.pad;
    left = static_cast<int>(rng.below(input_.width + 2 * options_.pad - output_.width + 1)) -
           options_.pad;
  }
  const bool flip = options_.hflip && rng.coin();
  render(image, top, left, flip, out);
}

void SampleTransform::eval(std::span<const std::uint8_t> image, float* out) const {
  render(image, (input_.height - output_.height) / 2, (input_.width - output_.width) / 2, false,
         out);
}

void SampleTransform::render(std::span<const std::uint8_t> image, int top, int left, bool flip,
                             float* out) const {
  const int h = output_.height, w = output_.width;
  for (int c = 0; c < input_.channels; ++c) {
    const std::uint8_t* plane =
        image.data() + static_cast<std::size_t>(c) * input_.height * input_.width;
    const float scale = scale_[c], shift = shift_[c];
    for (int y = 0; y < h; ++y) {
      const int sy = y + top;
      float* row = out + (static_cast<std::size_t>(c) * h + y) * w;
      if (sy < 0 || sy >= input_.height) {
        for (int x = 0; x < w; ++x) row[x] = shift;  // zero padding, normalised
        continue;
      }
      const std::uint8_t* src = plane + static_cast<std::size_t>(sy) * input_.width;
      for (int x = 0; x < w; ++x) {
        const int sx = (flip ? w - 1 - x : x) + left;
        const float v = (sx < 0 || sx >= input_.width) ? 0.0f : static_cast<float>(src[sx]);
        row[x] = v * scale + shift;
      }
    }
  }
}

}  // namespace conflux::data
