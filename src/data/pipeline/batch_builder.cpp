#include "conflux/data/pipeline/batch_builder.hpp"

#include <algorithm>

namespace conflux::data {

BatchBuilder::BatchBuilder(const SampleSource& source, const SampleTransform& transform,
                           int threads, SampleDecoding decoding)
    : source_(source), transform_(transform), decoding_(decoding), pool_(threads) {}

void BatchBuilder::shape(std::size_t n, model::Tensor& images,
                         std::vector<model::Label>& labels) const {
  const ImageShape out = transform_.output_shape();
  images.resize({static_cast<int>(n), out.channels, out.height, out.width});
  labels.resize(n);
}

bool BatchBuilder::pixels_of(std::uint32_t index, std::span<const std::uint8_t> bytes,
                             Scratch& scratch, ImageShape& shape,
                             std::span<const std::uint8_t>& pixels) {
  const SourceInfo& info = source_.info();
  if (info.format == SampleFormat::kPixels) {
    CONFLUX_CHECK(bytes.size() == info.shape.size(), "{}: {} bytes, expected {} pixels",
                  source_.where(index), bytes.size(), info.shape.size());
    shape = info.shape;
    pixels = bytes;
    return true;
  }
  decode_image(bytes, {.channels = decoding_.channels}, source_.where(index), scratch.decoded);
  shape = scratch.decoded.shape;
  pixels = scratch.decoded.pixels;
  return true;
}

bool BatchBuilder::prepare(std::uint32_t index, const std::vector<std::uint8_t>* fetched,
                           Scratch& scratch, ImageShape& shape,
                           std::span<const std::uint8_t>& pixels) {
  if (fetched == nullptr) {
    source_.read(index, scratch.bytes);
    fetched = &scratch.bytes;
  }
  return pixels_of(index, *fetched, scratch, shape, pixels);
}

// A skipped sample keeps its slot (so batches keep their size and placement), with zeros and
// the label the loss leaves out: the step's result does not depend on where it was built.
void BatchBuilder::skip(std::uint32_t index, const CorruptSampleError& error, float* out,
                        model::Label& label) {
  std::fill(out, out + floats_per_sample(), 0.0f);
  label = model::kSkippedLabel;
  ++skipped_;
  if (decoding_.log != nullptr) {
    decoding_.log->warn("skipping sample {} (data.on_corrupt = \"skip\"): {}", index, error.what());
  }
}

void BatchBuilder::build_train(std::span<const std::uint32_t> samples, std::uint64_t seed,
                               std::uint32_t epoch, model::Tensor& images,
                               std::vector<model::Label>& labels,
                               std::span<const std::vector<std::uint8_t>> fetched) {
  shape(samples.size(), images, labels);
  build_train_into(samples, seed, epoch, images.data.data(), labels.data(), fetched);
}

void BatchBuilder::build_train_into(std::span<const std::uint32_t> samples, std::uint64_t seed,
                                    std::uint32_t epoch, float* images, model::Label* labels,
                                    std::span<const std::vector<std::uint8_t>> fetched) {
  CONFLUX_CHECK(fetched.empty() || fetched.size() == samples.size(),
                "batch builder: {} samples but {} read ahead", samples.size(), fetched.size());
  const std::size_t stride = transform_.output_shape().size();
  pool_.parallel_for(samples.size(), [&](std::size_t begin, std::size_t end) {
    thread_local Scratch scratch;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t index = samples[i];
      float* out = images + i * stride;
      labels[i] = source_.label(index);
      try {
        ImageShape shape;
        std::span<const std::uint8_t> pixels;
        prepare(index, fetched.empty() ? nullptr : &fetched[i], scratch, shape, pixels);
        transform_.train({shape, pixels}, seed, epoch, index, out);
      } catch (const CorruptSampleError& e) {
        if (!decoding_.skip_corrupt) throw;
        skip(index, e, out, labels[i]);
      }
    }
  });
}

void BatchBuilder::build_eval(std::size_t begin, std::size_t end, model::Tensor& images,
                              std::vector<model::Label>& labels) {
  shape(end - begin, images, labels);
  const std::size_t stride = transform_.output_shape().size();
  pool_.parallel_for(end - begin, [&](std::size_t lo, std::size_t hi) {
    thread_local Scratch scratch;
    for (std::size_t i = lo; i < hi; ++i) {
      const auto index = static_cast<std::uint32_t>(begin + i);
      float* out = images.data.data() + i * stride;
      labels[i] = source_.label(index);
      try {
        ImageShape shape;
        std::span<const std::uint8_t> pixels;
        prepare(index, nullptr, scratch, shape, pixels);
        transform_.eval({shape, pixels}, out);
      } catch (const CorruptSampleError& e) {
        if (!decoding_.skip_corrupt) throw;
        skip(index, e, out, labels[i]);
      }
    }
  });
}

}  // namespace conflux::data
