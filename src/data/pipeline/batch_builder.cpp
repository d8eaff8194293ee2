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

void BatchBuilder::pixels_of(std::uint32_t index, std::span<const std::uint8_t> bytes,
                             Scratch& scratch, const Purpose& purpose, Prepared& out) {
  const SourceInfo& info = source_.info();
  if (info.format == SampleFormat::kPixels) {
    CONFLUX_CHECK(bytes.size() == info.shape.size(), "{}: {} bytes, expected {} pixels",
                  source_.where(index), bytes.size(), info.shape.size());
    out = {{info.shape, bytes}};
    return;
  }
  if (transform_.region_decode() && sniff_format(bytes) == ImageFormat::kJpeg) {
    decode_region(index, bytes, scratch, purpose, out);
    return;
  }
  decode_image(bytes, {.channels = decoding_.channels}, source_.where(index), scratch.decoded);
  out = {{scratch.decoded.shape, scratch.decoded.pixels}};
}

// The window is drawn from the full size the header gives, so it never depends on the decode;
// the scale depends only on the window and the output size: every rank decodes the same pixels.
void BatchBuilder::decode_region(std::uint32_t index, std::span<const std::uint8_t> bytes,
                                 Scratch& scratch, const Purpose& purpose, Prepared& out) {
  if (!scratch.region) scratch.region.emplace();
  const PixelWindow whole = scratch.region->read_header(bytes, source_.where(index));
  RegionRequest request{.channels = decoding_.channels, .window = whole};
  if (purpose.train) {
    const augment::Box box =
        transform_.train_crop(whole.width, whole.height, purpose.seed, purpose.epoch, index);
    request.window = {box.top, box.left, box.height, box.width};
    request.min_height = transform_.output_shape().height;
    request.min_width = transform_.output_shape().width;
  } else {
    const augment::Box resized = transform_.eval_resized(whole.width, whole.height);
    request.min_height = resized.height;
    request.min_width = resized.width;
  }
  scratch.placement = scratch.region->decode(request, scratch.decoded);
  out = {{scratch.decoded.shape, scratch.decoded.pixels}, &scratch.placement};
}

void BatchBuilder::prepare(std::uint32_t index, const std::vector<std::uint8_t>* fetched,
                           Scratch& scratch, const Purpose& purpose, Prepared& out) {
  if (fetched == nullptr) {
    source_.read(index, scratch.bytes);
    fetched = &scratch.bytes;
  }
  pixels_of(index, *fetched, scratch, purpose, out);
}

// A skipped sample keeps its slot (so batches keep their size and placement), with a blank
// image and the label the loss leaves out: the step's result does not depend on where it was
// built.
void BatchBuilder::skipped(std::uint32_t index, const CorruptSampleError& error,
                           model::Label& label) {
  label = model::kSkippedLabel;
  ++skipped_;
  if (decoding_.log != nullptr) {
    decoding_.log->warn("skipping sample {} (data.on_corrupt = \"skip\"): {}", index, error.what());
  }
}

void BatchBuilder::blank_floats(float* out) const {
  if (!transform_.pixel_output()) {
    std::fill(out, out + floats_per_sample(), 0.0f);
    return;
  }
  thread_local std::vector<std::uint8_t> zeros;
  zeros.assign(floats_per_sample(), 0);
  transform_.normalise(zeros.data(), 1, out);
}

template <typename Make, typename Blank>
void BatchBuilder::for_each_train(std::span<const std::uint32_t> samples, const Purpose& purpose,
                                  model::Label* labels,
                                  std::span<const std::vector<std::uint8_t>> fetched, Make make,
                                  Blank blank) {
  CONFLUX_CHECK(fetched.empty() || fetched.size() == samples.size(),
                "batch builder: {} samples but {} read ahead", samples.size(), fetched.size());
  pool_.parallel_for(samples.size(), [&](std::size_t begin, std::size_t end) {
    thread_local Scratch scratch;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t index = samples[i];
      labels[i] = source_.label(index);
      try {
        Prepared sample;
        prepare(index, fetched.empty() ? nullptr : &fetched[i], scratch, purpose, sample);
        make(i, sample);
      } catch (const CorruptSampleError& e) {
        if (!decoding_.skip_corrupt) throw;
        skipped(index, e, labels[i]);
        blank(i);
      }
    }
  });
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
  const std::size_t stride = floats_per_sample();
  for_each_train(
      samples, {true, seed, epoch}, labels, fetched,
      [&](std::size_t i, const Prepared& s) {
        float* out = images + i * stride;
        if (s.placement != nullptr)
          transform_.train(s.image, *s.placement, seed, epoch, samples[i], out);
        else
          transform_.train(s.image, seed, epoch, samples[i], out);
      },
      [&](std::size_t i) { blank_floats(images + i * stride); });
}

void BatchBuilder::build_train_encoded(std::span<const std::uint32_t> samples, std::uint64_t seed,
                                       std::uint32_t epoch, std::byte* images, model::Label* labels,
                                       std::span<const std::vector<std::uint8_t>> fetched) {
  if (encoding() == ImageEncoding::kFloat32) {
    // Floats are written in place; the service ships them as bytes.
    build_train_into(samples, seed, epoch, reinterpret_cast<float*>(images), labels, fetched);
    return;
  }
  const std::size_t stride = floats_per_sample();
  auto* pixels = reinterpret_cast<std::uint8_t*>(images);
  for_each_train(
      samples, {true, seed, epoch}, labels, fetched,
      [&](std::size_t i, const Prepared& s) {
        std::uint8_t* out = pixels + i * stride;
        if (s.placement != nullptr)
          transform_.train_pixels(s.image, *s.placement, seed, epoch, samples[i], out);
        else
          transform_.train_pixels(s.image, seed, epoch, samples[i], out);
      },
      [&](std::size_t i) { std::fill_n(pixels + i * stride, stride, std::uint8_t{0}); });
}

template <typename Make, typename Blank>
void BatchBuilder::for_each_eval(std::size_t begin, std::size_t end, model::Label* labels,
                                 Make make, Blank blank) {
  pool_.parallel_for(end - begin, [&](std::size_t lo, std::size_t hi) {
    thread_local Scratch scratch;
    for (std::size_t i = lo; i < hi; ++i) {
      const auto index = static_cast<std::uint32_t>(begin + i);
      labels[i] = source_.label(index);
      try {
        Prepared sample;
        prepare(index, nullptr, scratch, {}, sample);
        make(i, sample);
      } catch (const CorruptSampleError& e) {
        if (!decoding_.skip_corrupt) throw;
        skipped(index, e, labels[i]);
        blank(i);
      }
    }
  });
}

void BatchBuilder::build_eval(std::size_t begin, std::size_t end, model::Tensor& images,
                              std::vector<model::Label>& labels) {
  shape(end - begin, images, labels);
  const std::size_t stride = transform_.output_shape().size();
  for_each_eval(
      begin, end, labels.data(),
      [&](std::size_t i, const Prepared& sample) {
        float* out = images.data.data() + i * stride;
        if (sample.placement != nullptr)
          transform_.eval(sample.image, *sample.placement, out);
        else
          transform_.eval(sample.image, out);
      },
      [&](std::size_t i) { blank_floats(images.data.data() + i * stride); });
}

void BatchBuilder::build_eval_pixels(std::size_t begin, std::size_t end, PixelBuffer& pixels,
                                     std::vector<model::Label>& labels) {
  const std::size_t stride = transform_.output_shape().size();
  pixels.resize((end - begin) * stride);
  labels.resize(end - begin);
  for_each_eval(
      begin, end, labels.data(),
      [&](std::size_t i, const Prepared& sample) {
        std::uint8_t* out = pixels.data() + i * stride;
        if (sample.placement != nullptr)
          transform_.eval_pixels(sample.image, *sample.placement, out);
        else
          transform_.eval_pixels(sample.image, out);
      },
      [&](std::size_t i) { std::fill_n(pixels.data() + i * stride, stride, std::uint8_t{0}); });
}

}  // namespace conflux::data
