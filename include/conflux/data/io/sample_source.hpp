#pragma once
/// @file sample_source.hpp
/// The one interface every dataset is read through: random access by sample index to a
/// sample's bytes and label (docs/datasets.md). Built-in datasets (MNIST, Fashion-MNIST,
/// CIFAR-10) are small and held in memory; image folders, packs and HDF5 arrays are streamed:
/// a source holds only its index (names or offsets, and labels) and reads a sample's bytes
/// when asked, so no rank ever holds the dataset.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/data/io/in_memory_split.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// What read() returns for a sample.
enum class SampleFormat {
  kPixels,   ///< uint8 pixels, CHW, of exactly SourceInfo::shape
  kEncoded,  ///< an encoded image file (JPEG or PNG), decoded by data/io/image_codec
};

/// What a source knows about all its samples before reading any.
struct SourceInfo {
  std::string name;  ///< "mnist", ..., or "image-folder", "packed", ...
  SampleFormat format = SampleFormat::kPixels;
  /// Geometry of every image for kPixels; for kEncoded only `channels` is set (the channels
  /// decoding converts to) and height = width = 0 (images of any size).
  ImageShape shape;
  int num_classes = 0;                   ///< labels lie in [0, num_classes)
  std::vector<std::string> class_names;  ///< num_classes entries
  /// What identifies the data (agreed by every rank): files and their SHA-256, or for a
  /// streamed source its index file(s) or a digest of its listing.
  std::vector<SourceFile> sources;
  /// True when read() goes to storage (worth reading ahead); false for in-memory sources.
  bool streamed = true;
};

/// Random access to one split of a dataset. Every method is safe to call from several threads
/// at once (the batch builder's pool and the read-ahead thread share one source).
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// The split's facts.
  virtual const SourceInfo& info() const noexcept = 0;
  /// Number of samples.
  virtual std::size_t size() const noexcept = 0;
  /// Label of sample i, in [0, num_classes).
  virtual model::Label label(std::size_t i) const = 0;
  /// Replaces `out` with sample i's bytes (pixels or an encoded file, per info().format).
  /// InputError naming where() when the bytes cannot be read.
  virtual void read(std::size_t i, std::vector<std::uint8_t>& out) const = 0;
  /// Where sample i lives, for messages: a file path, or a shard and byte offset.
  virtual std::string where(std::size_t i) const = 0;
  /// Bytes this source keeps in memory (its index and labels; all pixels for in-memory ones).
  virtual std::size_t resident_bytes() const noexcept = 0;
};

/// A source over an InMemorySplit (the built-in datasets' readers).
class InMemorySource final : public SampleSource {
 public:
  /// Takes the dataset over.
  explicit InMemorySource(InMemorySplit dataset);
  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return dataset_.size(); }
  model::Label label(std::size_t i) const override { return dataset_.labels[i]; }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override;
  std::string where(std::size_t i) const override;
  std::size_t resident_bytes() const noexcept override;
  /// The dataset itself (pixels without a copy).
  const InMemorySplit& dataset() const noexcept { return dataset_; }

 private:
  InMemorySplit dataset_;
  SourceInfo info_;
};

/// The train and test splits of a dataset as sources.
struct SourceSplits {
  std::unique_ptr<SampleSource> train;
  std::unique_ptr<SampleSource> test;
};

}  // namespace conflux::data
