#pragma once
/// @file crc32c.hpp
/// CRC-32C (Castagnoli, as in iSCSI, ext4 and RocksDB): the checkpoint checksum. On x86-64 with
/// SSE4.2 it runs on the CPU's crc32 instruction (several GB/s, a fraction of a disk write);
/// elsewhere on a table.

#include <cstddef>
#include <cstdint>
#include <span>

namespace conflux {

/// Extends `crc` (the CRC-32C of the bytes before; 0 for none) over `bytes`, like zlib's
/// crc32(): crc32c(crc32c(0, a), b) == crc32c(0, a + b). crc32c(0, "123456789") == 0xe3069283.
std::uint32_t crc32c(std::uint32_t crc, std::span<const std::byte> bytes) noexcept;

/// crc32c() without the hardware instruction, for tests and machines without SSE4.2.
std::uint32_t crc32c_portable(std::uint32_t crc, std::span<const std::byte> bytes) noexcept;

}  // namespace conflux
