#pragma once
/// @file batch.hpp
/// A training batch as the trainer consumes it, with where it was built.

#include <cstdint>
#include <vector>

#include "conflux/data/pipeline/pixel_buffer.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// Who built a batch.
enum class BatchOrigin {
  kLocal,     ///< the trainer's own preprocessing threads
  kWorker,    ///< a worker rank of the data service
  kFallback,  ///< the trainer, after a worker missed its deadline
};

/// Name of an origin for logs and the audit file ("local", "worker", "fallback").
const char* origin_name(BatchOrigin origin) noexcept;

/// How a batch's images travel from the rank that built them to the trainer.
enum class ImageEncoding : std::uint32_t {
  kFloat32 = 0,  ///< the normalised floats, 4 bytes a value
  kPixels = 1,   ///< the 8-bit image before normalisation, 1 byte a value; the trainer
                 ///< normalises it (SampleTransform::pixel_output())
};

/// Bytes of one value in `encoding`.
constexpr std::size_t value_bytes(ImageEncoding encoding) noexcept {
  return encoding == ImageEncoding::kPixels ? 1 : sizeof(float);
}

/// Batch `step` of `epoch` for one trainer: images [n, C, H, W], labels, dataset indices.
/// The images are the normalised floats, or, for a consumer that normalises them itself (a GPU
/// trainer, which uploads a quarter of the bytes), the 8-bit images before normalisation.
struct Batch {
  std::uint32_t epoch = 0;
  std::size_t step = 0;
  std::size_t step_samples = 0;  ///< samples of this step over all trainers (for the loss scale)
  ImageEncoding encoding = ImageEncoding::kFloat32;  ///< which of the two below holds the images
  model::Tensor images;                              ///< kFloat32: [n, C, H, W] floats
  /// kPixels: n * C * H * W bytes from the loader's pixel memory (pinned on a GPU trainer, so
  /// the upload reads the very buffer the batch was built or received into).
  PixelBuffer pixels;
  std::vector<model::Label> labels;
  std::vector<std::uint32_t> samples;  ///< dataset index of each image
  BatchOrigin origin = BatchOrigin::kLocal;
  int worker = -1;  ///< worker index when origin == kWorker
};

}  // namespace conflux::data
