#pragma once
/// @file byte_size.hpp
/// Byte counts as people read them in messages.

#include <string>

namespace conflux {

/// "512 B", "1.5 KiB", "2.0 GiB", ... (binary units, one decimal); a double, so that estimates
/// beyond 2^64 bytes print too.
std::string format_bytes(double bytes);

}  // namespace conflux
