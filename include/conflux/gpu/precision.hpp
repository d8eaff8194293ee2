#pragma once
/// @file precision.hpp
/// The numeric precision of GPU trainers (train.precision) and the element types of device
/// tensors: fp32, and bf16 as a 16-bit type of conflux's own whose conversions run alike on the
/// host and a CUDA device (round to nearest even), so that the host-executor tests round as the
/// GPU does. Its bits are __nv_bfloat16's, which cuBLAS and cuDNN read. Free of CUDA types.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "conflux/core/host_device.hpp"

namespace conflux::gpu {

/// Numeric precision of a GPU layer's arithmetic. Every precision accumulates in fp32 (cuDNN's
/// compute type CUDNN_DATA_FLOAT, cuBLAS's CUBLAS_COMPUTE_32F); they differ in the stored
/// element type and in the multiplications:
///   kFp32  float tensors, full fp32 multiplications: TF32 off (cuDNN's CUDNN_FMA_MATH, cuBLAS's
///          default math; PyTorch with allow_tf32 = False).
///   kTf32  float tensors; TF32 tensor cores allowed (inputs rounded to 10 mantissa bits before
///          multiplying; PyTorch's allow_tf32 = True).
///   kBf16  bf16 activations (8 significant bits) and tensor cores, as torch.autocast(bfloat16)
///          with channels_last: convolutions and matrix products in bf16, fp32 master weights,
///          optimiser state, batch-norm statistics and loss.
enum class Precision { kFp32, kTf32, kBf16 };

/// "fp32", "tf32" or "bf16".
const char* to_string(Precision precision) noexcept;
/// Bytes of one stored element: 4 (fp32, tf32) or 2 (bf16).
std::size_t element_bytes(Precision precision) noexcept;
/// The precision train.precision names ("fp32", "tf32", "bf16"; checked by the schema).
Precision precision_named(const char* name) noexcept;

/// A bfloat16 value: the upper 16 bits of a float.
struct Bf16 {
  std::uint16_t bits = 0;
};

/// The element type of a device tensor.
enum class DType { kF32, kBf16 };

/// Bytes of one element of `t`.
constexpr std::size_t size_of(DType t) noexcept {
  return t == DType::kBf16 ? 2 : 4;
}

CONFLUX_HD inline float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}
CONFLUX_HD inline std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}

/// The float a bf16 stands for (exact).
CONFLUX_HD inline float to_float(Bf16 v) {
  return bits_to_float(static_cast<std::uint32_t>(v.bits) << 16);
}
/// `f` rounded to the nearest bf16, ties to even; NaN stays a (quiet) NaN.
CONFLUX_HD inline Bf16 to_bf16(float f) {
  std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}

/// Element i of a tensor of floats or bf16 values, as a float.
CONFLUX_HD inline float load(const float* p, std::size_t i) {
  return p[i];
}
CONFLUX_HD inline float load(const Bf16* p, std::size_t i) {
  return to_float(p[i]);
}
/// Stores `v` as element i (rounded to nearest even for bf16).
CONFLUX_HD inline void store(float* p, std::size_t i, float v) {
  p[i] = v;
}
CONFLUX_HD inline void store(Bf16* p, std::size_t i, float v) {
  p[i] = to_bf16(v);
}

/// The element type of DType t.
template <DType t>
using Element = std::conditional_t<t == DType::kBf16, Bf16, float>;

/// Calls f(T{}) with T the element type of `t` (float or Bf16) and returns its result.
template <class F>
decltype(auto) with_element(DType t, F&& f) {
  if (t == DType::kBf16) return f(Bf16{});
  return f(float{});
}

}  // namespace conflux::gpu
