#include "conflux/core/crc32c.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

namespace conflux {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// Published check values (RFC 3720 B.4; the CRC catalogue's "check" for CRC-32/ISCSI).
TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c(0, bytes_of("123456789")), 0xe3069283u);
  EXPECT_EQ(crc32c_portable(0, bytes_of("123456789")), 0xe3069283u);
  EXPECT_EQ(crc32c(0, {}), 0u);
  const std::vector<std::byte> zeros(32, std::byte{0});
  EXPECT_EQ(crc32c(0, zeros), 0x8a9136aau);
  const std::vector<std::byte> ones(32, std::byte{0xff});
  EXPECT_EQ(crc32c(0, ones), 0x62a8ab43u);
}

// The hardware path equals the table on every length and alignment, and chaining pieces gives
// the CRC of the whole.
TEST(Crc32c, HardwareEqualsPortableAndChains) {
  std::mt19937 rng(7);
  std::vector<std::byte> data(4099);
  for (auto& b : data) b = static_cast<std::byte>(rng());
  const std::span<const std::byte> all(data);
  for (std::size_t offset = 0; offset < 9; ++offset) {
    for (const std::size_t length : {0ul, 1ul, 7ul, 8ul, 9ul, 63ul, 1000ul, 4090ul}) {
      const auto piece = all.subspan(offset, length);
      EXPECT_EQ(crc32c(0, piece), crc32c_portable(0, piece)) << offset << " " << length;
    }
  }
  const std::uint32_t whole = crc32c(0, all);
  EXPECT_EQ(crc32c(crc32c(0, all.first(1234)), all.subspan(1234)), whole);
  data[2000] ^= std::byte{1};
  EXPECT_NE(crc32c(0, data), whole);
}

}  // namespace
}  // namespace conflux
