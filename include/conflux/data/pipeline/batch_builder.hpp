#pragma once
/// @file batch_builder.hpp
/// Assembles a batch (float images + labels) from dataset indices on a rank's preprocessing
/// threads: read (or take what was read ahead), decode when the source is encoded, transform.
/// With transform.decode = "region" a JPEG is decoded only as far as the transform needs it
/// (SampleTransform::region_decode): the crop's window, at a reduced DCT scale.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "conflux/core/log.hpp"
#include "conflux/core/thread_pool.hpp"
#include "conflux/data/io/image_codec.hpp"
#include "conflux/data/io/jpeg_region.hpp"
#include "conflux/data/io/sample_source.hpp"
#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/pipeline/sample_fetcher.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// How samples are turned into images before the transform.
struct SampleDecoding {
  int channels = 3;             ///< data.channels: what encoded images are decoded to
  bool skip_corrupt = false;    ///< data.on_corrupt = "skip"
  const Logger* log = nullptr;  ///< where skipped samples are named; null: not logged
};

/// How batches of `transform` travel: pixels when its output allows, else floats.
inline ImageEncoding image_encoding(const SampleTransform& transform) noexcept {
  return transform.pixel_output() ? ImageEncoding::kPixels : ImageEncoding::kFloat32;
}

/// Builds batches of one source with one transform, on `threads` threads.
class BatchBuilder {
 public:
  /// `source` and `transform` must outlive the builder.
  BatchBuilder(const SampleSource& source, const SampleTransform& transform, int threads,
               SampleDecoding decoding = {});
  /// Augmented training batch of `samples` for `epoch`: images [n, C, H, W] and labels.
  /// `fetched`, when not empty, holds the samples' bytes (read ahead); else they are read here.
  void build_train(std::span<const std::uint32_t> samples, std::uint64_t seed, std::uint32_t epoch,
                   model::Tensor& images, std::vector<model::Label>& labels,
                   std::span<const std::vector<std::uint8_t>> fetched = {});
  /// As build_train, into caller-owned memory: samples.size() images and labels.
  void build_train_into(std::span<const std::uint32_t> samples, std::uint64_t seed,
                        std::uint32_t epoch, float* images, model::Label* labels,
                        std::span<const std::vector<std::uint8_t>> fetched = {});
  /// As build_train_into, the images in encoding() (what the data service ships):
  /// samples.size() * bytes_per_sample() bytes.
  void build_train_encoded(std::span<const std::uint32_t> samples, std::uint64_t seed,
                           std::uint32_t epoch, std::byte* images, model::Label* labels,
                           std::span<const std::vector<std::uint8_t>> fetched = {});
  /// Floats per output image.
  std::size_t floats_per_sample() const noexcept { return transform_.output_shape().size(); }
  /// How build_train_encoded writes images: pixels when the transform allows, else floats.
  ImageEncoding encoding() const noexcept { return image_encoding(transform_); }
  /// Bytes per image in encoding().
  std::size_t bytes_per_sample() const noexcept {
    return floats_per_sample() * value_bytes(encoding());
  }
  /// Evaluation batch of the contiguous samples [begin, end).
  void build_eval(std::size_t begin, std::size_t end, model::Tensor& images,
                  std::vector<model::Label>& labels);
  /// build_eval() as 8-bit images before normalisation (SampleTransform::eval_pixels), for a
  /// consumer that normalises them itself: (end - begin) * floats_per_sample() bytes.
  void build_eval_pixels(std::size_t begin, std::size_t end, PixelBuffer& pixels,
                         std::vector<model::Label>& labels);
  /// Samples skipped as corrupt so far (data.on_corrupt = "skip").
  std::uint64_t skipped() const noexcept { return skipped_.load(); }

 private:
  // Per-thread working memory of one sample.
  struct Scratch {
    std::vector<std::uint8_t> bytes;
    DecodedImage decoded;
    std::optional<JpegRegionDecoder> region;  // made on a thread's first region decode
    RegionPlacement placement;
  };
  // What a sample is decoded for: a training step's crop (seed, epoch) or evaluation.
  struct Purpose {
    bool train = false;
    std::uint64_t seed = 0;
    std::uint32_t epoch = 0;
  };
  // A sample ready for the transform: the whole image, or the part `placement` locates.
  struct Prepared {
    ImageView image;
    const RegionPlacement* placement = nullptr;
  };
  void shape(std::size_t n, model::Tensor& images, std::vector<model::Label>& labels) const;
  // Pixels of sample `index` from its bytes (CorruptSampleError when they do not decode).
  void pixels_of(std::uint32_t index, std::span<const std::uint8_t> bytes, Scratch& scratch,
                 const Purpose& purpose, Prepared& out);
  // The part of a JPEG that `purpose` needs, at a reduced scale where that covers it.
  void decode_region(std::uint32_t index, std::span<const std::uint8_t> bytes, Scratch& scratch,
                     const Purpose& purpose, Prepared& out);
  // Reads (unless fetched) and decodes sample `index` into `out`.
  void prepare(std::uint32_t index, const std::vector<std::uint8_t>* fetched, Scratch& scratch,
               const Purpose& purpose, Prepared& out);
  // Runs `make(i, sample)` for every sample on the pool, or `blank(i)` for one skipped as
  // corrupt (whose label becomes kSkippedLabel).
  template <typename Make, typename Blank>
  void for_each_train(std::span<const std::uint32_t> samples, const Purpose& purpose,
                      model::Label* labels, std::span<const std::vector<std::uint8_t>> fetched,
                      Make make, Blank blank);
  // The same over the evaluation samples [begin, end).
  template <typename Make, typename Blank>
  void for_each_eval(std::size_t begin, std::size_t end, model::Label* labels, Make make,
                     Blank blank);
  void skipped(std::uint32_t index, const CorruptSampleError& error, model::Label& label);
  // A skipped sample's floats: those of an all-zero image (zeros, or normalised zeros when the
  // transform's output is pixels), so every encoding gives the same batch.
  void blank_floats(float* out) const;

  const SampleSource& source_;
  const SampleTransform& transform_;
  SampleDecoding decoding_;
  ThreadPool pool_;
  std::atomic<std::uint64_t> skipped_{0};
};

}  // namespace conflux::data
