#pragma once
/// @file event_file.hpp
/// TensorBoard event files: length-prefixed records, each framed by masked CRC-32C checksums,
/// holding serialized Event protobufs (proto/tensorboard_event.proto), so that
/// `tensorboard --logdir` draws a run's scalars. docs/watching.md describes the format.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace conflux::telemetry {

/// TensorBoard's checksum of a record part: CRC-32C, rotated and offset ("masked") so that a
/// checksum of data holding checksums stays well distributed.
std::uint32_t masked_crc32c(std::span<const std::byte> bytes) noexcept;

/// One named scalar of a summary.
struct Scalar {
  std::string_view tag;  ///< e.g. "train/loss"; TensorBoard groups by the part before '/'
  double value = 0;      ///< stored as float, as TensorBoard's simple_value is
};

/// Appends events to one new event file; every add() is written through at once (a crash
/// loses no event that add() returned from). Not thread-safe.
class EventFileWriter {
 public:
  /// Creates `dir` if needed and the file events.out.tfevents.<unix time>.<host>.<pid> in it
  /// (TensorBoard reads the files of a directory in name order), starting with the file
  /// version record; Error when it cannot.
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// Scalars of global step `step`, time-stamped now.
  void add_scalars(std::int64_t step, std::span<const Scalar> scalars);
  /// A session start at `step`: TensorBoard drops what earlier files recorded for steps >= it.
  void add_session_start(std::int64_t step);
  /// The file written.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write_record(const std::string& data);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace conflux::telemetry
