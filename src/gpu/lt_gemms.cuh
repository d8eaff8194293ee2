#pragma once
// GEMMs with a fused epilogue (bias, bias + ReLU) through cuBLASLt, for the CUDA executor: one
// plan (operation descriptor, matrix layouts, algorithm) per shape, element types, epilogue and
// pointer alignment, chosen once by cuBLASLt's heuristic and cached. Included by .cu files only.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cublaslt_api.hpp"
#include "conflux/gpu/device_layer.hpp"

namespace conflux::gpu {

class LtGemms {
 public:
  /// `tf32`: fp32 products on tensor cores (train.precision = "tf32").
  explicit LtGemms(bool tf32) : tf32_(tf32) { CONFLUX_CUBLAS_CHECK(cublaslt().create(&handle_)); }
  ~LtGemms() {
    plans_.clear();
    if (handle_ != nullptr) static_cast<void>(cublaslt().destroy(handle_));
  }
  LtGemms(const LtGemms&) = delete;
  LtGemms& operator=(const LtGemms&) = delete;

  /// Enqueues `g` (beta 0, with g.bias and/or g.relu) on `stream` with `workspace`; false,
  /// enqueuing nothing, when cuBLASLt does not take it: no algorithm, or a bias not 16-byte
  /// aligned (epilogue kernels have been seen to read it with 16-byte loads whatever the
  /// heuristic was told).
  bool run(const Gemm& g, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    if (g.bias != nullptr && alignment(g.bias) < 16) return false;
    const Plan& plan = plan_for(g, workspace_bytes);
    if (!plan.found) return false;
    const CublasLtApi& lt = cublaslt();
    CONFLUX_CUBLAS_CHECK(
        lt.desc_set(plan.op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias));
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t status = lt.matmul(
        handle_, plan.op.get(), &one, g.a, plan.a.get(), g.b, plan.b.get(), &zero, g.c,
        plan.c.get(), g.c, plan.c.get(), &plan.algorithm, workspace, workspace_bytes, stream);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) return false;  // nothing was enqueued
    CONFLUX_CUBLAS_CHECK(status);
    return true;
  }

 private:
  struct DescDeleter {
    void operator()(cublasLtMatmulDesc_t d) const { static_cast<void>(cublaslt().desc_destroy(d)); }
  };
  struct LayoutDeleter {
    void operator()(cublasLtMatrixLayout_t l) const {
      static_cast<void>(cublaslt().layout_destroy(l));
    }
  };
  struct PreferenceDeleter {
    void operator()(cublasLtMatmulPreference_t p) const {
      static_cast<void>(cublaslt().preference_destroy(p));
    }
  };
  using Op = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, DescDeleter>;
  using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LayoutDeleter>;

  // What a plan depends on: the call without its pointers, but their alignments (an algorithm
  // chosen for 16-byte aligned operands may not run on others).
  struct Key {
    bool trans_a, trans_b, relu, bias;
    int m, n, k, lda, ldb, ldc;
    DType a_type, c_type;
    unsigned align_a, align_b, align_c, align_bias;
    bool operator==(const Key&) const = default;
  };
  struct Plan {
    Op op;
    Layout a, b, c;
    cublasLtMatmulAlgo_t algorithm{};
    bool found = false;
  };

  static unsigned alignment(const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    unsigned a = 256;
    while (a > 1 && address % a != 0) a /= 2;
    return a;
  }
  static cudaDataType_t cuda_type(DType t) { return t == DType::kBf16 ? CUDA_R_16BF : CUDA_R_32F; }

  static Layout layout(DType t, int rows, int cols, int ld) {
    cublasLtMatrixLayout_t l = nullptr;
    CONFLUX_CUBLAS_CHECK(cublaslt().layout_create(
        &l, cuda_type(t), static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
    return Layout(l);
  }

  const Plan& plan_for(const Gemm& g, std::size_t workspace_bytes) {
    const Key key{g.trans_a,
                  g.trans_b,
                  g.relu,
                  g.bias != nullptr,
                  g.m,
                  g.n,
                  g.k,
                  g.lda,
                  g.ldb,
                  g.ldc,
                  g.a_type,
                  g.c_type,
                  alignment(g.a),
                  alignment(g.b),
                  alignment(g.c),
                  alignment(g.bias)};
    for (const auto& [k, plan] : plans_) {
      if (k == key) return plan;
    }
    plans_.emplace_back(key, make_plan(g, workspace_bytes));
    return plans_.back().second;
  }

  Plan make_plan(const Gemm& g, std::size_t workspace_bytes) const {
    const CublasLtApi& lt = cublaslt();
    Plan p;
    // bf16 products and fp32 ones accumulate in fp32; TF32 only when asked for, as cuBLAS.
    const cublasComputeType_t compute =
        g.a_type == DType::kF32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t op = nullptr;
    CONFLUX_CUBLAS_CHECK(lt.desc_create(&op, compute, CUDA_R_32F));
    p.op = Op(op);
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue =
        g.bias != nullptr ? (g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                          : (g.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    // The bias has the output's type (cuBLASLt's default for bf16 and fp32 outputs).
    const auto bias_type = static_cast<std::int32_t>(cuda_type(g.c_type));
    CONFLUX_CUBLAS_CHECK(lt.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CONFLUX_CUBLAS_CHECK(lt.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CONFLUX_CUBLAS_CHECK(
        lt.desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    CONFLUX_CUBLAS_CHECK(
        lt.desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    CONFLUX_CUBLAS_CHECK(
        lt.desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias));
    // Stored shapes: op(A) is m x k, op(B) k x n, C m x n, column-major.
    p.a = g.trans_a ? layout(g.a_type, g.k, g.m, g.lda) : layout(g.a_type, g.m, g.k, g.lda);
    p.b = g.trans_b ? layout(g.a_type, g.n, g.k, g.ldb) : layout(g.a_type, g.k, g.n, g.ldb);
    p.c = layout(g.c_type, g.m, g.n, g.ldc);
    cublasLtMatmulPreference_t raw = nullptr;
    CONFLUX_CUBLAS_CHECK(lt.preference_create(&raw));
    const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>
        preference(raw);
    const auto ws = static_cast<std::uint64_t>(workspace_bytes);
    CONFLUX_CUBLAS_CHECK(
        lt.preference_set(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    set_alignments(raw, g);
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    const cublasStatus_t status = lt.heuristic(handle_, op, p.a.get(), p.b.get(), p.c.get(),
                                               p.c.get(), raw, 1, &result, &count);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || count == 0) return p;  // not found: fall back
    CONFLUX_CUBLAS_CHECK(status);
    p.algorithm = result.algo;
    p.found = true;
    return p;
  }

  static void set_alignments(cublasLtMatmulPreference_t preference, const Gemm& g) {
    const CublasLtApi& lt = cublaslt();
    const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> operands[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.c}};
    for (const auto& [attribute, pointer] : operands) {
      const std::uint32_t a = alignment(pointer);
      CONFLUX_CUBLAS_CHECK(lt.preference_set(preference, attribute, &a, sizeof a));
    }
  }

  bool tf32_;
  cublasLtHandle_t handle_ = nullptr;
  std::vector<std::pair<Key, Plan>> plans_;
};

}  // namespace conflux::gpu
