#pragma once
/// @file host_executor.hpp
/// A sequential CPU executor (gpu/device_layer.hpp) for the tests: runs the device kernels'
/// element functions in loops, GEMMs and convolutions by their definitions, so that the GPU
/// path's indexing, layouts and sequencing are checked against the CPU model on machines
/// without a GPU. A reference, not a fast path; test-only.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer.hpp"

namespace conflux::gpu::testing {

/// Host memory with DeviceBuffer's interface.
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

/// Everything runs at once, in index order; counts the calls of each kind.
struct HostExecutor {
  template <class T>
  using Buffer = HostBuffer<T>;

  std::size_t launches = 0;  ///< for_each calls (kernel launches on a GPU)

  template <class F>
  void for_each(std::size_t count, const F& f) {
    ++launches;
    for (std::size_t i = 0; i < count; ++i) f(i);
  }

  /// Column-major SGEMM with cuBLAS's conventions and its checks of the leading dimensions.
  void gemm(const Gemm& g) {
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

  /// cuDNN's cross-correlation on NHWC activations and KRSC weights, by its definition.
  void conv(const ConvCall& call) {
    const ConvGeometry& g = call.geometry;
    const std::size_t oh = g.out_height(), ow = g.out_width();
    const std::size_t x_count = static_cast<std::size_t>(g.batch) * g.height * g.width * g.channels;
    const std::size_t w_count =
        static_cast<std::size_t>(g.out_channels) * g.kernel * g.kernel * g.channels;
    const std::size_t y_count = static_cast<std::size_t>(g.batch) * oh * ow * g.out_channels;
    using Kind = ConvCall::Kind;
    std::fill_n(call.out,
                call.kind == Kind::kForward        ? y_count
                : call.kind == Kind::kBackwardData ? x_count
                                                   : w_count,
                0.0f);
    for (int n = 0; n < g.batch; ++n) {
      for (std::size_t oy = 0; oy < oh; ++oy) {
        for (std::size_t ox = 0; ox < ow; ++ox) {
          for (int k = 0; k < g.out_channels; ++k) {
            const std::size_t yi = ((n * oh + oy) * ow + ox) * g.out_channels + k;
            for (int r = 0; r < g.kernel; ++r) {
              const long iy = static_cast<long>(oy) * g.stride - g.padding + r;
              if (iy < 0 || iy >= g.height) continue;
              for (int s = 0; s < g.kernel; ++s) {
                const long ix = static_cast<long>(ox) * g.stride - g.padding + s;
                if (ix < 0 || ix >= g.width) continue;
                for (int c = 0; c < g.channels; ++c) {
                  const std::size_t xi =
                      ((static_cast<std::size_t>(n) * g.height + iy) * g.width + ix) * g.channels +
                      c;
                  const std::size_t wi =
                      ((static_cast<std::size_t>(k) * g.kernel + r) * g.kernel + s) * g.channels +
                      c;
                  if (call.kind == Kind::kForward) {
                    call.out[yi] += call.x[xi] * call.w[wi];
                  } else if (call.kind == Kind::kBackwardData) {
                    call.out[xi] += call.y[yi] * call.w[wi];
                  } else {
                    call.out[wi] += call.y[yi] * call.x[xi];
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  template <class T>
  void zero(T* p, std::size_t count) {
    std::fill(p, p + count, T{});
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t count) {
    if (count > 0) std::memcpy(dst, src, count * sizeof(T));
  }
  template <class T>
  void upload(T* dst, const T* src, std::size_t count) {
    copy(dst, src, count);
  }
  template <class T>
  void download(T* dst, const T* src, std::size_t count) {
    copy(dst, src, count);
  }
  void synchronize() {}
};

}  // namespace conflux::gpu::testing
