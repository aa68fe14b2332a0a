#pragma once
// How the CUDA backend presents Backend::gemm's row-major C[m, n] = alpha op(A) op(B) + beta C to cuBLASLt, which
// is column-major (cuda_gemm.cpp), as plain numbers: free of CUDA headers, so the CPU tests
// (tests/backend/cublaslt_gemm_layout_test.cpp) run cuBLASLt's documented arithmetic on them against the CPU
// backend's gemm.
//
// A row-major rows x cols matrix with row stride ld is, read column-major with leading dimension ld, its own
// transpose. So C^T = op(B)^T op(A)^T is computed instead, with no data moved: cuBLASLt's first operand is B,
// its second A, and each keeps its transpose flag.
#include "api/backend/backend.h"

namespace tower::backend::cuda {

// A column-major matrix as cublasLtMatrixLayoutCreate takes it, and whether the matmul transposes it.
struct ColumnMajorOperand {
  Index rows, cols, ld;
  bool transposed;
};

struct CublasLtGemmLayout {
  ColumnMajorOperand first, second, result;  // cuBLASLt's A, B and C (= D)
};

inline CublasLtGemmLayout cublaslt_gemm_layout(bool trans_a, bool trans_b, Index m, Index n, Index k, Index lda,
                                               Index ldb, Index ldc) {
  // As stored, row-major: B is [k, n] or, transposed, [n, k]; A is [m, k] or [k, m]; C is [m, n].
  const auto column_major = [](Index rows, Index cols, Index ld, bool transposed) {
    return ColumnMajorOperand{cols, rows, ld, transposed};
  };
  return {column_major(trans_b ? n : k, trans_b ? k : n, ldb, trans_b),
          column_major(trans_a ? k : m, trans_a ? m : k, lda, trans_a), column_major(m, n, ldc, false)};
}

}  // namespace tower::backend::cuda
