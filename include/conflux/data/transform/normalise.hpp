#pragma once
/// @file normalise.hpp
/// The one conversion of an 8-bit pixel to the model's input value, written once for the CPU
/// (SampleTransform::normalise) and the GPU trainer's input kernel (gpu/kernels/common.hpp), so
/// that a batch normalised on the device holds the same floats as one normalised on the host.

#include <cstdint>

#include "conflux/core/host_device.hpp"

namespace conflux::data {

/// p * scale + shift, rounded after the product and after the sum: never contracted into a
/// fused multiply-add (nvcc contracts by default; the host build has no FMA in its ISA level
/// and compiles ISO C++, which does not contract), so both sides give the same bits.
CONFLUX_HD inline float normalised_pixel(std::uint8_t p, float scale, float shift) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(static_cast<float>(p), scale), shift);
#else
  return static_cast<float>(p) * scale + shift;
#endif
}

}  // namespace conflux::data
