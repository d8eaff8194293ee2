#pragma once
/// @file host_executor.hpp
/// A sequential CPU executor for layer_math.hpp and ModelEngine: runs the GPU code path's
/// element functions and GEMM descriptors on the host, so that tests check the GPU layers'
/// indexing and sequencing without a GPU. A reference, not a fast path.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/layer_math.hpp"

namespace conflux::gpu {

/// Host memory with DeviceBuffer's interface (what ModelEngine needs).
template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t count) : data_(count) {}
  T* data() noexcept { return data_.empty() ? nullptr : data_.data(); }
  const T* data() const noexcept { return data_.empty() ? nullptr : data_.data(); }
  std::size_t size() const noexcept { return data_.size(); }

 private:
  std::vector<T> data_;
};

/// The executor: everything runs immediately, in index order.
struct HostExecutor {
  template <class T>
  using Buffer = HostBuffer<T>;

  template <class F>
  void for_each(std::size_t count, const F& f) {
    for (std::size_t i = 0; i < count; ++i) f(i);
  }

  /// Column-major SGEMM with cuBLAS's argument conventions (and its checks of the leading
  /// dimensions, which cuBLAS answers with CUBLAS_STATUS_INVALID_VALUE), summing over k in order.
  void gemm(const math::Gemm& g) {
    const auto at_least = [](int ld, int rows) { return ld >= std::max(1, rows); };
    CONFLUX_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0 && at_least(g.lda, g.trans_a ? g.k : g.m) &&
                      at_least(g.ldb, g.trans_b ? g.n : g.k) && at_least(g.ldc, g.m),
                  "gemm: invalid arguments m={} n={} k={} lda={} ldb={} ldc={}", g.m, g.n, g.k,
                  g.lda, g.ldb, g.ldc);
    for (int j = 0; j < g.n; ++j) {
      for (int i = 0; i < g.m; ++i) {
        float sum = 0.0f;
        for (int p = 0; p < g.k; ++p) {
          const float a = g.trans_a ? g.a[p + static_cast<std::size_t>(i) * g.lda]
                                    : g.a[i + static_cast<std::size_t>(p) * g.lda];
          const float b = g.trans_b ? g.b[j + static_cast<std::size_t>(p) * g.ldb]
                                    : g.b[p + static_cast<std::size_t>(j) * g.ldb];
          sum += a * b;
        }
        float& c = g.c[i + static_cast<std::size_t>(j) * g.ldc];
        c = g.beta == 0.0f ? sum : sum + g.beta * c;  // beta = 0 never reads C, like BLAS
      }
    }
  }

  template <class T>
  void zero(T* p, std::size_t count) {
    std::fill(p, p + count, T{});
  }
  /// Host -> executor memory (here a plain copy).
  template <class T>
  void upload(T* dst, const T* src, std::size_t count) {
    if (count > 0) std::memcpy(dst, src, count * sizeof(T));
  }
  /// Executor -> host memory.
  template <class T>
  void download(T* dst, const T* src, std::size_t count) {
    if (count > 0) std::memcpy(dst, src, count * sizeof(T));
  }
  /// Waits for enqueued work (nothing is ever pending here).
  void synchronize() {}
};

}  // namespace conflux::gpu
