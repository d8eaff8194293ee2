#include "conflux/telemetry/event_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "conflux/core/crc32c.hpp"
#include "conflux/core/error.hpp"
#include "tensorboard_event.pb.h"

namespace conflux::telemetry {

namespace pb = conflux::tensorboard;

std::uint32_t masked_crc32c(std::span<const std::byte> bytes) noexcept {
  const std::uint32_t crc = crc32c(0, bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "unknown";
  return host.data();
}

// Little-endian, as the record format prescribes.
template <typename T>
std::array<std::byte, sizeof(T)> little_endian(T value) {
  std::array<std::byte, sizeof(T)> bytes{};
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    bytes[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  }
  return bytes;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CONFLUX_CHECK(!ec, "cannot create the TensorBoard directory {}: {}", dir.string(), ec.message());
  const auto now = static_cast<long long>(unix_seconds());
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}", now, host_name(), ::getpid());
  file_ = std::fopen(path_.c_str(), "ab");
  CONFLUX_CHECK(file_ != nullptr, "cannot create {}: {}", path_.string(), std::strerror(errno));
  pb::Event event;
  event.set_wall_time(unix_seconds());
  event.set_file_version("brain.Event:2");
  write_record(event.SerializeAsString());
}

EventFileWriter::~EventFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void EventFileWriter::add_scalars(std::int64_t step, std::span<const Scalar> scalars) {
  pb::Event event;
  event.set_wall_time(unix_seconds());
  event.set_step(step);
  pb::Summary* summary = event.mutable_summary();
  for (const Scalar& s : scalars) {
    pb::Summary::Value* value = summary->add_value();
    value->set_tag(std::string(s.tag));
    value->set_simple_value(static_cast<float>(s.value));
  }
  write_record(event.SerializeAsString());
}

void EventFileWriter::add_session_start(std::int64_t step) {
  pb::Event event;
  event.set_wall_time(unix_seconds());
  event.set_step(step);
  event.mutable_session_log()->set_status(pb::SessionLog::START);
  write_record(event.SerializeAsString());
}

// A record: uint64 length, masked CRC of the length, the data, masked CRC of the data.
void EventFileWriter::write_record(const std::string& data) {
  const auto length = little_endian<std::uint64_t>(data.size());
  const auto length_crc = little_endian<std::uint32_t>(masked_crc32c(length));
  const auto data_bytes = std::as_bytes(std::span(data.data(), data.size()));
  const auto data_crc = little_endian<std::uint32_t>(masked_crc32c(data_bytes));
  std::string record;
  record.reserve(data.size() + 16);
  record.append(reinterpret_cast<const char*>(length.data()), length.size());
  record.append(reinterpret_cast<const char*>(length_crc.data()), length_crc.size());
  record.append(data);
  record.append(reinterpret_cast<const char*>(data_crc.data()), data_crc.size());
  // One write and a flush per record: a reader (or a crash) sees whole records, bar the last.
  const bool written = std::fwrite(record.data(), 1, record.size(), file_) == record.size();
  CONFLUX_CHECK(written && std::fflush(file_) == 0, "cannot write {}: {}", path_.string(),
                std::strerror(errno));
}

}  // namespace conflux::telemetry
