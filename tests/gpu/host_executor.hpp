#pragma once
/// @file host_executor.hpp
/// A sequential CPU executor (gpu/device_layer.hpp) for the tests: runs the device kernels'
/// element functions in loops, GEMMs and convolutions by their definitions, so that the GPU
/// path's indexing, layouts and sequencing are checked against the CPU model on machines
/// without a GPU. A reference, not a fast path; test-only.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer.hpp"

namespace conflux::gpu::testing {

/// Bytes held by every HostBuffer of the test process, now and at most (reset_peak() to measure
/// one stretch): what the same code would hold in device memory.
struct HostMemory {
  static inline std::size_t live = 0;
  static inline std::size_t peak = 0;
  static inline std::uint64_t changes = 0;  ///< allocations plus frees (memory_changes())
  static void reset_peak() { peak = live; }
};

/// Host memory with DeviceBuffer's interface.
template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t count) : data_(count) {
    if (count > 0) ++HostMemory::changes;
    HostMemory::live += count * sizeof(T);
    HostMemory::peak = std::max(HostMemory::peak, HostMemory::live);
  }
  HostBuffer(HostBuffer&& other) noexcept { data_.swap(other.data_); }
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    data_.swap(other.data_);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() {
    if (!data_.empty()) ++HostMemory::changes;
    HostMemory::live -= data_.size() * sizeof(T);
  }
  T* data() noexcept { return data_.empty() ? nullptr : data_.data(); }
  const T* data() const noexcept { return data_.empty() ? nullptr : data_.data(); }
  std::size_t size() const noexcept { return data_.size(); }

 private:
  std::vector<T> data_;
};

/// Everything runs at once, in index order; counts the calls of each kind. Captures as a CUDA
/// stream does: between begin_capture() and end_capture() the calls are recorded with their
/// arguments as they are then (a kernel's by value, a GEMM's and a convolution's pointers)
/// instead of run, and a Graph's launch() runs the record; a transfer from or to the host
/// while capturing throws, as CUDA refuses pageable copies.
struct HostExecutor {
  template <class T>
  using Buffer = HostBuffer<T>;
  using Graph = std::vector<std::function<void()>>;

  std::size_t launches = 0;  ///< for_each calls (kernel launches on a GPU)

  template <class F>
  void for_each(std::size_t count, const F& f) {
    if (capturing_) {
      record([this, count, f] { for_each(count, f); });
      return;
    }
    ++launches;
    for (std::size_t i = 0; i < count; ++i) f(i);
  }

  void begin_capture() {
    CONFLUX_CHECK(!capturing_, "host executor: already capturing");
    capturing_ = true;
    record_.clear();
  }
  Graph end_capture() {
    CONFLUX_CHECK(capturing_, "host executor: not capturing");
    capturing_ = false;
    return std::move(record_);
  }
  void abort_capture() noexcept {
    capturing_ = false;
    record_.clear();
  }
  void launch(Graph& graph) {
    for (const auto& call : graph) call();
  }
  std::uint64_t memory_changes() const noexcept { return HostMemory::changes; }

  /// Column-major GEMM with cuBLAS's conventions and its checks of the leading dimensions,
  /// summing over k in order in float, then the bias and ReLU epilogue; a bf16 C is rounded
  /// once.
  void gemm(const Gemm& g) {
    if (capturing_) {
      record([this, g] { gemm(g); });
      return;
    }
    const auto at_least = [](int ld, int rows) { return ld >= std::max(1, rows); };
    CONFLUX_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0 && at_least(g.lda, g.trans_a ? g.k : g.m) &&
                      at_least(g.ldb, g.trans_b ? g.n : g.k) && at_least(g.ldc, g.m),
                  "gemm: invalid arguments m={} n={} k={} lda={} ldb={} ldc={}", g.m, g.n, g.k,
                  g.lda, g.ldb, g.ldc);
    for (int j = 0; j < g.n; ++j) {
      for (int i = 0; i < g.m; ++i) {
        float sum = 0.0f;
        for (int p = 0; p < g.k; ++p) {
          const float a = at(g.a, g.a_type,
                             g.trans_a ? p + static_cast<std::size_t>(i) * g.lda
                                       : i + static_cast<std::size_t>(p) * g.lda);
          const float b = at(g.b, g.a_type,
                             g.trans_b ? j + static_cast<std::size_t>(p) * g.ldb
                                       : p + static_cast<std::size_t>(j) * g.ldb);
          sum += a * b;
        }
        const std::size_t ci = i + static_cast<std::size_t>(j) * g.ldc;
        // beta = 0 never reads C, like BLAS.
        float v = g.beta == 0.0f ? sum : sum + g.beta * at(g.c, g.c_type, ci);
        if (g.bias != nullptr) v += at(g.bias, g.c_type, static_cast<std::size_t>(i));
        if (g.relu) v = std::max(v, 0.0f);
        put(g.c, g.c_type, ci, v);
      }
    }
  }

  /// cuDNN's cross-correlation on NHWC activations and KRSC weights, by its definition, summed
  /// in float; bf16 outputs rounded once.
  void conv(const ConvCall& call) {
    if (capturing_) {
      record([this, call] { conv(call); });
      return;
    }
    const ConvShape& g = call.shape;
    const std::size_t oh = g.output_height(), ow = g.output_width();
    const std::size_t x_count = static_cast<std::size_t>(g.batch) * g.height * g.width * g.channels;
    const std::size_t w_count =
        static_cast<std::size_t>(g.out_channels) * g.kernel * g.kernel * g.channels;
    const std::size_t y_count = static_cast<std::size_t>(g.batch) * oh * ow * g.out_channels;
    using Kind = ConvCall::Kind;
    const std::size_t out_count = call.kind == Kind::kForward        ? y_count
                                  : call.kind == Kind::kBackwardData ? x_count
                                                                     : w_count;
    std::vector<float> sums(out_count, 0.0f);
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
                    sums[yi] += at(call.x, call.dtype, xi) * at(call.w, call.dtype, wi);
                  } else if (call.kind == Kind::kBackwardData) {
                    sums[xi] += at(call.y, call.dtype, yi) * at(call.w, call.dtype, wi);
                  } else {
                    sums[wi] += at(call.y, call.dtype, yi) * at(call.x, call.dtype, xi);
                  }
                }
              }
            }
          }
        }
      }
    }
    for (std::size_t i = 0; i < out_count; ++i) put(call.out, call.dtype, i, sums[i]);
  }

  std::byte* scratch(std::size_t bytes) {
    if (scratch_.size() < bytes) scratch_ = HostBuffer<std::byte>(bytes);
    return scratch_.data();
  }

  template <class T>
  void zero(T* p, std::size_t count) {
    if (capturing_) {
      record([this, p, count] { zero(p, count); });
      return;
    }
    std::fill(p, p + count, T{});
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t count) {
    if (capturing_) {
      record([this, dst, src, count] { copy(dst, src, count); });
      return;
    }
    if (count > 0) std::memcpy(dst, src, count * sizeof(T));
  }
  template <class T>
  void upload(T* dst, const T* src, std::size_t count) {
    CONFLUX_CHECK(!capturing_, "host executor: a host transfer while capturing a graph");
    copy(dst, src, count);
  }
  template <class T>
  void download(T* dst, const T* src, std::size_t count) {
    CONFLUX_CHECK(!capturing_, "host executor: a host transfer while capturing a graph");
    copy(dst, src, count);
  }
  void synchronize() {
    CONFLUX_CHECK(!capturing_, "host executor: a wait while capturing a graph");
  }

 private:
  void record(std::function<void()> call) { record_.push_back(std::move(call)); }

  bool capturing_ = false;
  Graph record_;
  HostBuffer<std::byte> scratch_;

  static float at(const void* p, DType t, std::size_t i) {
    return t == DType::kBf16 ? to_float(static_cast<const Bf16*>(p)[i])
                             : static_cast<const float*>(p)[i];
  }
  static void put(void* p, DType t, std::size_t i, float v) {
    if (t == DType::kBf16) {
      static_cast<Bf16*>(p)[i] = to_bf16(v);
    } else {
      static_cast<float*>(p)[i] = v;
    }
  }
};

}  // namespace conflux::gpu::testing
