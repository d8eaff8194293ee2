#include "conflux/core/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace conflux {

namespace {

constexpr std::uint32_t kReflectedPolynomial = 0x82f63b78;

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) != 0 ? (c >> 1) ^ kReflectedPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(
    std::uint32_t crc, std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  std::uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, sizeof word);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}

bool has_sse42() noexcept {
  static const bool supported = __builtin_cpu_supports("sse4.2") != 0;
  return supported;
}
#endif

}  // namespace

std::uint32_t crc32c_portable(std::uint32_t crc, std::span<const std::byte> bytes) noexcept {
  std::uint32_t c = ~crc;
  for (const std::byte b : bytes)
    c = kTable[(c ^ std::to_integer<std::uint32_t>(b)) & 0xff] ^ (c >> 8);
  return ~c;
}

std::uint32_t crc32c(std::uint32_t crc, std::span<const std::byte> bytes) noexcept {
#if defined(__x86_64__)
  if (has_sse42()) return crc32c_sse42(crc, bytes);
#endif
  return crc32c_portable(crc, bytes);
}

}  // namespace conflux
