#pragma once
/// @file sgemm_probe.hpp
/// conflux-bench's own cblas_sgemm: it stands in front of OpenBLAS's (an executable's symbol
/// wins over a shared library's), so that `gemm-limit` sees every SGEMM call the model's layers
/// issue, with its exact shape, and the seconds spent inside them, without any hook in the
/// library. Off, it only forwards the call.

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace conflux::bench {

/// One SGEMM call's shape (row-major C[m,n] = op(A)[m,k] op(B)[k,n] + beta C).
struct SgemmShape {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0;
  int n = 0;
  int k = 0;
  bool accumulate = false;  ///< beta != 0
  auto operator<=>(const SgemmShape&) const = default;
  /// 2 m n k.
  double flops() const { return 2.0 * m * n * k; }
  /// e.g. "NT 32x27x1024 +C".
  std::string describe() const;
};

/// Starts recording the shape of every SGEMM call (clears what was recorded).
void sgemm_probe_record();
/// Stops recording and returns the calls in the order they were issued.
std::vector<SgemmShape> sgemm_probe_take();
/// Seconds spent inside SGEMM since the last sgemm_probe_reset_seconds(), counted only while
/// the clock is on (sgemm_probe_clock(true)): two clock reads per call.
double sgemm_probe_seconds();
/// Zeroes sgemm_probe_seconds().
void sgemm_probe_reset_seconds();
/// Turns the per-call clock on or off.
void sgemm_probe_clock(bool on);
/// Calls OpenBLAS's SGEMM directly (never recorded or clocked) on contiguous operands of `s`.
void real_sgemm(const SgemmShape& s, const float* a, const float* b, float* c);

}  // namespace conflux::bench
