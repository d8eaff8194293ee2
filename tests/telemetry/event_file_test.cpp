// TensorBoard event files: record framing with masked CRC-32C, and the Events inside.
#include "conflux/telemetry/event_file.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "tensorboard_event.pb.h"

namespace conflux::telemetry {
namespace {

namespace pb = conflux::tensorboard;

std::uint32_t masked_of(std::string_view text) {
  return masked_crc32c(std::as_bytes(std::span(text.data(), text.size())));
}

TEST(EventFile, MaskedCrcMatchesAnIndependentImplementation) {
  // Values from tests/tools/tfevents_decode.py's bitwise CRC-32C and mask.
  EXPECT_EQ(masked_of("123456789"), 0xc78ab0e5u);
  EXPECT_EQ(masked_of(std::string(8, '\0')), 0x07980329u);
}

// The records of an event file, each checked against its two checksums.
std::vector<pb::Event> read_events(const std::filesystem::path& path) {
  const std::string bytes = testing::read_file(path);
  std::vector<pb::Event> events;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    EXPECT_LE(pos + 12, bytes.size());
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length, bytes.data() + pos, 8);  // little-endian host (x86-64)
    std::memcpy(&length_crc, bytes.data() + pos + 8, 4);
    EXPECT_EQ(length_crc, masked_of(std::string_view(bytes).substr(pos, 8)));
    const std::string data = bytes.substr(pos + 12, length);
    std::memcpy(&data_crc, bytes.data() + pos + 12 + length, 4);
    EXPECT_EQ(data_crc, masked_of(data));
    pb::Event event;
    EXPECT_TRUE(event.ParseFromString(data));
    events.push_back(event);
    pos += 16 + length;
  }
  EXPECT_EQ(pos, bytes.size());
  return events;
}

TEST(EventFile, WritesVersionScalarsAndSessionStarts) {
  testing::TempDir dir;
  std::filesystem::path path;
  {
    EventFileWriter writer(dir.path() / "tb");
    path = writer.path();
    EXPECT_EQ(path.parent_path(), dir.path() / "tb");
    EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u);
    const Scalar scalars[] = {{"train/loss", 0.25}, {"train/accuracy", 0.875}};
    writer.add_scalars(12, scalars);
    writer.add_session_start(7);
    // Written through at once: readable before the writer closes.
    EXPECT_EQ(read_events(path).size(), 3u);
  }
  const std::vector<pb::Event> events = read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.7e9);
  EXPECT_EQ(events[1].step(), 12);
  ASSERT_EQ(events[1].summary().value_size(), 2);
  EXPECT_EQ(events[1].summary().value(0).tag(), "train/loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 0.25f);
  EXPECT_EQ(events[1].summary().value(1).simple_value(), 0.875f);
  EXPECT_EQ(events[2].step(), 7);
  EXPECT_EQ(events[2].session_log().status(), pb::SessionLog::START);
}

TEST(EventFile, UnwritableDirectoryIsAnError) {
  EXPECT_THROW(EventFileWriter("/proc/conflux-no-such-dir/tb"), Error);
}

}  // namespace
}  // namespace conflux::telemetry
