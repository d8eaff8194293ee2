// Names of the GPU precisions (gpu/precision.hpp); in every build, for the config's users.

#include "conflux/gpu/precision.hpp"

#include <cstring>

namespace conflux::gpu {

const char* to_string(Precision precision) noexcept {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
  }
  return "unknown";
}

std::size_t element_bytes(Precision precision) noexcept {
  return precision == Precision::kBf16 ? 2 : 4;
}

Precision precision_named(const char* name) noexcept {
  if (std::strcmp(name, "bf16") == 0) return Precision::kBf16;
  if (std::strcmp(name, "tf32") == 0) return Precision::kTf32;
  return Precision::kFp32;
}

}  // namespace conflux::gpu
