#pragma once
/// @file service_protocol.hpp
/// Messages of the data service. A trainer sends a fixed-size Request to a worker rank; the
/// worker answers each batch request with the meta message (ReplyHeader, then the batch's
/// sample indices and labels) and the image payload: 8-bit pixels the trainer normalises when
/// the transform's output allows (ImageEncoding::kPixels, a quarter of the bytes), else the
/// floats, received straight into the trainer's tensor. Both carry the tags of the request's
/// per-worker sequence number, so that MPI's non-overtaking order and the header's request id
/// pair every answer with its request. The image payload travels as consecutive chunks of about
/// kChunkBytes on the image tag: the trainer copies each chunk while the worker builds the next,
/// and while the chunk is still in the cache the two cores share, which saves one trip through
/// memory per byte. The request carries the batch's plan positions and size, hence both sides know
/// the chunk count.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "conflux/data/pipeline/batch.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// MPI tags of the data service (on its own communicator).
inline constexpr int kRequestTag = 100;
/// Tag of a worker's done message to trainer 0 (its worker index, one int32): every trainer
/// said goodbye and every answer went out. Trainer 0 waits for these with a deadline instead of
/// entering a collective that a frozen worker would never join.
inline constexpr int kDoneTag = 101;
/// Replies use tags kReplyTagBase + 2 * (sequence mod kReplyTagSpan) (+1 for the images).
inline constexpr int kReplyTagBase = 1000;
inline constexpr std::uint64_t kReplyTagSpan = 8192;

/// Tag of the meta message answering request `sequence` (per trainer-worker pair).
constexpr int meta_tag(std::uint64_t sequence) noexcept {
  return kReplyTagBase + 2 * static_cast<int>(sequence % kReplyTagSpan);
}
/// Tag of the image message answering request `sequence`.
constexpr int image_tag(std::uint64_t sequence) noexcept {
  return meta_tag(sequence) + 1;
}

/// Target size of one image message.
inline constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

/// Samples per image chunk for images of `bytes_per_sample` bytes (at least 1).
constexpr std::size_t chunk_samples(std::size_t bytes_per_sample) noexcept {
  return bytes_per_sample == 0 || bytes_per_sample >= kChunkBytes ? 1
                                                                  : kChunkBytes / bytes_per_sample;
}

/// Image messages of a batch of `samples` samples.
constexpr std::size_t chunk_count(std::size_t samples, std::size_t bytes_per_sample) noexcept {
  const std::size_t per_chunk = chunk_samples(bytes_per_sample);
  return (samples + per_chunk - 1) / per_chunk;
}

/// What a trainer asks of a worker.
enum class RequestKind : std::uint32_t {
  kBatch = 1,    ///< build batch (epoch, step) of this trainer
  kGoodbye = 2,  ///< this trainer needs nothing more; cancel what is queued for it
};

/// A trainer-to-worker request (fixed size, sent as bytes).
struct Request {
  RequestKind kind = RequestKind::kBatch;
  std::int32_t trainer = 0;    ///< trainer index (0..T-1)
  std::uint32_t epoch = 0;     ///< epoch of the batch
  std::uint32_t samples = 0;   ///< samples in the batch (kBatch)
  std::uint64_t step = 0;      ///< step of the batch within the epoch
  std::uint64_t sequence = 0;  ///< request number of this trainer at this worker
  std::uint64_t begin = 0;     ///< plan position of the batch's first sample (kBatch)
};

/// How a worker answered.
enum class ReplyStatus : std::uint32_t {
  kBatch = 0,      ///< the batch follows
  kCancelled = 1,  ///< not built (the trainer said goodbye); the image messages are empty
  kLeaving = 2,    ///< not built: the worker is leaving the service (a stop signal reached it);
                   ///< the trainer builds the batch itself and sends that worker nothing more
};

/// Start of the meta message.
struct ReplyHeader {
  std::uint64_t sequence = 0;  ///< the request's sequence number
  std::uint64_t step = 0;
  std::uint32_t epoch = 0;
  std::int32_t trainer = 0;
  std::uint32_t samples = 0;  ///< samples in the batch (may be 0 in a short last step)
  ReplyStatus status = ReplyStatus::kBatch;
  std::uint64_t values_per_sample = 0;  ///< image values (C x H x W) per sample
  // The worker's load, for the trainers' offload controllers (profiling).
  float build_seconds = 0;   ///< time this batch took to build (the worker's service time)
  float busy_fraction = 0;   ///< share of the worker's recent wall time spent building
  std::uint32_t queued = 0;  ///< requests waiting at the worker when this answer left
  ImageEncoding encoding = ImageEncoding::kFloat32;  ///< how the image chunks hold the values
};

/// Bytes of a meta message for `samples` samples.
std::size_t meta_bytes(std::size_t samples) noexcept;

/// Writes header, indices and labels into `out` (resized to meta_bytes).
void encode_meta(const ReplyHeader& header, std::span<const std::uint32_t> indices,
                 std::span<const model::Label> labels, std::vector<std::byte>& out);

/// A decoded meta message (spans point into the received bytes).
struct MetaView {
  ReplyHeader header;
  std::span<const std::uint32_t> indices;
  std::span<const model::Label> labels;
};

/// Decodes `received` bytes of a meta message; RuntimeError when the size does not match the
/// header (a protocol violation, named with `peer`).
MetaView decode_meta(std::span<const std::byte> received, int peer);

}  // namespace conflux::data
