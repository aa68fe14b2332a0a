// The column-major view the CUDA backend hands cuBLASLt for a row-major GEMM
// (api/backend/cuda/cublaslt_gemm_layout.h), checked without a GPU: host loops do what cuBLASLt's documentation
// says its matmul does with those operands (D = alpha op(A) op(B) + beta C, column-major, leading dimensions) and
// must equal the CPU backend's gemm, for every transpose combination with row strides wider than the rows.
#include "api/backend/cuda/cublaslt_gemm_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"

namespace tower::backend::cuda {
namespace {

std::vector<float> random_values(Index n, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = g.uniform(-1.f, 1.f);
  return v;
}

// Element (r, c) of op(M) for a column-major operand.
float at(const float* data, const ColumnMajorOperand& m, Index r, Index c) {
  return m.transposed ? data[c + r * m.ld] : data[r + c * m.ld];
}

// cublasLtMatmul with C = D: result = alpha * op(first) op(second) + beta * result.
void cublaslt_matmul(const CublasLtGemmLayout& l, float alpha, const float* first, const float* second, float beta,
                     float* result) {
  const Index rows = l.result.rows, cols = l.result.cols;
  const Index inner = l.first.transposed ? l.first.rows : l.first.cols;
  ASSERT_EQ(inner, l.second.transposed ? l.second.cols : l.second.rows);
  ASSERT_EQ(rows, l.first.transposed ? l.first.cols : l.first.rows);
  ASSERT_EQ(cols, l.second.transposed ? l.second.rows : l.second.cols);
  for (const ColumnMajorOperand* m : {&l.first, &l.second, &l.result}) ASSERT_GE(m->ld, m->rows);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) {
      double sum = 0;
      for (Index p = 0; p < inner; ++p) sum += double{at(first, l.first, i, p)} * at(second, l.second, p, j);
      float& out = result[i + j * l.result.ld];
      out = static_cast<float>(alpha * sum + beta * out);
    }
}

TEST(CublasLtGemmLayout, ColumnMajorMatmulOnTheLayoutMatchesTheCpuBackend) {
  const Index m = 5, n = 7, k = 3, pad = 2;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true}) {
      SCOPED_TRACE(std::string(trans_a ? "A^T" : "A") + (trans_b ? " B^T" : " B"));
      // Stored row-major with row strides wider than the rows: A is [m, k] or [k, m], B is [k, n] or [n, k].
      const Index a_rows = trans_a ? k : m, a_cols = trans_a ? m : k, b_rows = trans_b ? n : k,
                  b_cols = trans_b ? k : n;
      const Index lda = a_cols + pad, ldb = b_cols + pad + 1, ldc = n + pad;
      const std::vector<float> a = random_values(a_rows * lda, 1), b = random_values(b_rows * ldb, 2);
      std::vector<float> c = random_values(m * ldc, 3), c_cpu = c;
      const float alpha = 0.75f, beta = -0.5f;

      const CublasLtGemmLayout l = cublaslt_gemm_layout(trans_a, trans_b, m, n, k, lda, ldb, ldc);
      cublaslt_matmul(l, alpha, b.data(), a.data(), beta, c.data());
      get(Device::cpu()).gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c_cpu.data(), ldc);
      for (std::size_t i = 0; i < c.size(); ++i)
        EXPECT_NEAR(c[i], c_cpu[i], 1e-5f) << "element " << i << " (row " << i / ldc << ", column " << i % ldc << ")";
    }
}

}  // namespace
}  // namespace tower::backend::cuda
