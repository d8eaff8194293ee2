#include "sgemm_probe.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux::bench {
namespace {

using SgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const float*, blasint, const float*, blasint, float, float*,
                         blasint);

// The benchmark is single-threaded around the model, so plain globals suffice.
bool g_recording = false;
bool g_clock = false;
double g_seconds = 0;
std::vector<SgemmShape> g_calls;

SgemmFn openblas_sgemm() {
  // RTLD_NEXT: the next definition after this executable's, i.e. the shared library's.
  static const auto fn = reinterpret_cast<SgemmFn>(dlsym(RTLD_NEXT, "cblas_sgemm"));
  CONFLUX_CHECK(fn != nullptr, "gemm-limit: no cblas_sgemm after conflux-bench's own ({})",
                dlerror());
  return fn;
}

}  // namespace

std::string SgemmShape::describe() const {
  return fmt::format("{}{} {}x{}x{}{}", trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k,
                     accumulate ? " +C" : "");
}

void sgemm_probe_record() {
  g_calls.clear();
  g_recording = true;
}

std::vector<SgemmShape> sgemm_probe_take() {
  g_recording = false;
  return std::exchange(g_calls, {});
}

double sgemm_probe_seconds() {
  return g_seconds;
}
void sgemm_probe_reset_seconds() {
  g_seconds = 0;
}
void sgemm_probe_clock(bool on) {
  g_clock = on;
}

void real_sgemm(const SgemmShape& s, const float* a, const float* b, float* c) {
  const int lda = s.trans_a ? s.m : s.k;
  const int ldb = s.trans_b ? s.k : s.n;
  openblas_sgemm()(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                   s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, a, lda, b, ldb,
                   s.accumulate ? 1.0f : 0.0f, c, s.n);
}

}  // namespace conflux::bench

// Replaces OpenBLAS's cblas_sgemm in conflux-bench only (see sgemm_probe.hpp).
extern "C" void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE trans_a,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE trans_b, OPENBLAS_CONST blasint m,
                            OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k,
                            OPENBLAS_CONST float alpha, OPENBLAS_CONST float* a,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b,
                            OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float* c,
                            OPENBLAS_CONST blasint ldc) {
  using namespace conflux::bench;
  if (g_recording) {
    g_calls.push_back({.trans_a = trans_a == CblasTrans,
                       .trans_b = trans_b == CblasTrans,
                       .m = m,
                       .n = n,
                       .k = k,
                       .accumulate = beta != 0.0f});
  }
  if (!g_clock) {
    openblas_sgemm()(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  openblas_sgemm()(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  g_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
