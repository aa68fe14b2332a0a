#include <climits>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/backend/cuda/cublaslt_gemm_layout.h"
#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/cuda/cudnn_descriptors.h"

namespace tower::backend::cuda {

namespace {

// The largest power of two, up to cuBLASLt's default of 256, that divides the address of every matrix of a batch
// (p, p + stride, ...; stride in floats). cuBLASLt chooses among the kernels that can read each operand at the
// alignment it is promised, so a view at an offset needs its own plan.
std::uint32_t alignment(const void* p, Index stride = 0) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto step = static_cast<std::uintptr_t>(stride) * sizeof(float);
  std::uint32_t bytes = 256;
  while (bytes > 4 && (address % bytes != 0 || step % bytes != 0)) bytes /= 2;
  return bytes;
}

// One shape of product; batch > 1 with the three operands' batch strides (in floats), else batch 1 and strides 0.
struct GemmKey {
  bool trans_a, trans_b;
  Index m, n, k, lda, ldb, ldc;
  std::uint32_t align_a, align_b, align_c;
  Index batch, stride_a, stride_b, stride_c;
  auto operator<=>(const GemmKey&) const = default;
};

// "GEMM (m, n) = A^T (m, k) * B (k, n), lda ..., ldb ..., ldc ...", with op(A) and op(B)'s shapes, and the batch.
std::string describe(const GemmKey& key) {
  std::string text = "GEMM " + Shape{key.m, key.n}.to_string();
  text += std::string(" = ") + (key.trans_a ? "A^T " : "A ") + Shape{key.m, key.k}.to_string();
  text += std::string(" * ") + (key.trans_b ? "B^T " : "B ") + Shape{key.k, key.n}.to_string();
  text += ", lda " + std::to_string(key.lda) + ", ldb " + std::to_string(key.ldb) + ", ldc " + std::to_string(key.ldc);
  if (key.batch > 1)
    text += ", batch " + std::to_string(key.batch) + " with strides " + std::to_string(key.stride_a) + ", " +
            std::to_string(key.stride_b) + ", " + std::to_string(key.stride_c);
  return text;
}

// The most workspace a GEMM may ask for; cuBLASLt's heuristic only picks algorithms within it.
constexpr std::uint64_t kMaxWorkspaceBytes = std::uint64_t{32} << 20;

// One shape's cuBLASLt matmul in the column-major view of cublaslt_gemm_layout.h: the operation, the layouts of
// its operands and the algorithm the heuristic chose. CUBLAS_COMPUTE_32F, without TF32: PyTorch's default for
// matmul; CUBLAS_COMPUTE_32F_FAST_TF32 with TOWER_ALLOW_TF32=1.
class GemmPlan {
 public:
  GemmPlan(cublasLtHandle_t handle, const GemmKey& key) : what_(describe(key)) {
    try {
      const CublasLtGemmLayout layout =
          cublaslt_gemm_layout(key.trans_a, key.trans_b, key.m, key.n, key.k, key.lda, key.ldb, key.ldc);
      check(cublasLtMatmulDescCreate(&operation_,
                                     tf32_allowed_in_matmuls() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                     CUDA_R_32F),
            "creating the matmul descriptor");
      set(CUBLASLT_MATMUL_DESC_TRANSA, layout.first.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
      set(CUBLASLT_MATMUL_DESC_TRANSB, layout.second.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
      describe_operand(&first_, layout.first, key.batch, key.stride_b);
      describe_operand(&second_, layout.second, key.batch, key.stride_a);
      describe_operand(&result_, layout.result, key.batch, key.stride_c);
      choose_algorithm(handle, key);
    } catch (...) {
      release();
      throw;
    }
  }
  ~GemmPlan() { release(); }
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  // C = alpha * op(A) op(B) + beta * C on `stream`, as column-major C^T = alpha * op(B)^T op(A)^T + beta * C^T.
  void run(cublasLtHandle_t handle, float alpha, const float* a, const float* b, float beta, float* c, void* workspace,
           cudaStream_t stream) const {
    check(cublasLtMatmul(handle, operation_, &alpha, b, first_, a, second_, &beta, c, result_, c, result_, &algorithm_,
                         workspace, workspace_bytes_, stream),
          "cublasLtMatmul");
  }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  void check(cublasStatus_t status, const std::string& step) const { check_cublas(status, what_ + ": " + step); }

  void set(cublasLtMatmulDescAttributes_t attribute, cublasOperation_t op) {
    check(cublasLtMatmulDescSetAttribute(operation_, attribute, &op, sizeof op), "setting a transpose");
  }

  void release() {
    if (result_) cublasLtMatrixLayoutDestroy(result_);
    if (second_) cublasLtMatrixLayoutDestroy(second_);
    if (first_) cublasLtMatrixLayoutDestroy(first_);
    if (operation_) cublasLtMatmulDescDestroy(operation_);
  }

  // A batch of matrices `stride` floats apart (0: one matrix shared by every product of the batch).
  void describe_operand(cublasLtMatrixLayout_t* out, const ColumnMajorOperand& operand, Index batch, Index stride) {
    check(cublasLtMatrixLayoutCreate(out, CUDA_R_32F, static_cast<std::uint64_t>(operand.rows),
                                     static_cast<std::uint64_t>(operand.cols), static_cast<std::int64_t>(operand.ld)),
          "creating a matrix layout");
    if (batch <= 1) return;
    const auto count = static_cast<std::int32_t>(batch);
    const auto offset = static_cast<std::int64_t>(stride);
    check(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "setting the batch count");
    check(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof offset),
          "setting the batch stride");
  }

  void choose_algorithm(cublasLtHandle_t handle, const GemmKey& key) {
    cublasLtMatmulPreference_t preference = nullptr;
    check(cublasLtMatmulPreferenceCreate(&preference), "creating the heuristic's preference");
    const auto set_preference = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
      return cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value);
    };
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = set_preference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kMaxWorkspaceBytes);
    // cuBLASLt's first operand is B, its second A; C and D are the same matrix.
    for (const auto& [attribute, bytes] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
                                           std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
                                           std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
                                           std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c}})
      if (status == CUBLAS_STATUS_SUCCESS) status = set_preference(attribute, bytes);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(handle, operation_, first_, second_, result_, result_, preference, 1,
                                              &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    check(status, "choosing an algorithm");
    if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS)
      check(CUBLAS_STATUS_NOT_SUPPORTED, "choosing an algorithm (the heuristic found none)");
    algorithm_ = result.algo;
    workspace_bytes_ = result.workspaceSize;
  }

  std::string what_;
  cublasLtMatmulDesc_t operation_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr, second_ = nullptr, result_ = nullptr;
  cublasLtMatmulAlgo_t algorithm_{};
  std::size_t workspace_bytes_ = 0;
};

}  // namespace

struct CudaBackend::GemmPlans {
  std::map<GemmKey, std::unique_ptr<GemmPlan>> by_key;
};

void CudaBackend::GemmPlansDeleter::operator()(GemmPlans* plans) const { delete plans; }

cublasLtHandle_t CudaBackend::cublaslt() {
  stream();  // makes this GPU current: the handle belongs to it
  if (!cublaslt_) check_cublas(cublasLtCreate(&cublaslt_), "cublasLtCreate on " + device().to_string());
  return cublaslt_;
}

void CudaBackend::gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, float alpha, const float* a, Index lda,
                       const float* b, Index ldb, float beta, float* c, Index ldc) {
  gemm_batched(trans_a, trans_b, 1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0);
}

namespace {
// C = beta * C for an empty product (k == 0), as the CPU backend and BLAS define it, with beta == 0 overwriting C
// without reading it: cuBLASLt is not asked to multiply nothing, and cuDNN's strided scaling does the rest.
void scale_result(CudaBackend& backend, const GemmKey& key, float beta, float* c) {
  const Index m = key.m, n = key.n, ldc = key.ldc;
  if (beta == 0.f) {
    check_cuda(cudaMemset2DAsync(c, static_cast<std::size_t>(ldc) * sizeof(float), 0,
                                 static_cast<std::size_t>(n) * sizeof(float), static_cast<std::size_t>(m),
                                 backend.stream()),
               describe(key) + ": zeroing C");
    return;
  }
  if (m > INT_MAX || n > INT_MAX || ldc > INT_MAX / m)
    throw std::invalid_argument(describe(key) + ": C is too large to scale when k = 0");
  TensorDescriptor matrix;  // C as a [1, 1, m, n] tensor with row stride ldc
  const int rows = static_cast<int>(m), cols = static_cast<int>(n), stride = static_cast<int>(ldc);
  check_cudnn(cudnnSetTensor4dDescriptorEx(matrix.get(), CUDNN_DATA_FLOAT, 1, 1, rows, cols, rows * stride,
                                           rows * stride, stride, 1),
              describe(key) + ": describing C");
  check_cudnn(cudnnScaleTensor(backend.cudnn(), matrix.get(), c, &beta), describe(key) + ": scaling C by beta");
}
}  // namespace

void CudaBackend::gemm_batched(bool trans_a, bool trans_b, Index batch, Index m, Index n, Index k, float alpha,
                               const float* a, Index lda, Index stride_a, const float* b, Index ldb, Index stride_b,
                               float beta, float* c, Index ldc, Index stride_c) {
  if (batch == 0 || m == 0 || n == 0) return;
  // One product is keyed with batch 1 and no strides, so gemm and a batch of one share their plans.
  if (batch == 1) stride_a = stride_b = stride_c = 0;
  const GemmKey key{trans_a, trans_b, m, n, k, lda, ldb, ldc, alignment(a, stride_a), alignment(b, stride_b),
                    alignment(c, stride_c), batch, stride_a, stride_b, stride_c};
  if (batch > INT_MAX) throw std::invalid_argument(describe(key) + ": more products than cuBLASLt's batch count holds");
  if (k == 0) {
    for (Index i = 0; i < batch; ++i) scale_result(*this, key, beta, c + i * stride_c);
    return;
  }
  if (!gemm_plans_) gemm_plans_.reset(new GemmPlans);
  std::unique_ptr<GemmPlan>& plan = gemm_plans_->by_key[key];
  if (!plan) {
    try {
      plan = std::make_unique<GemmPlan>(cublaslt(), key);
    } catch (...) {
      gemm_plans_->by_key.erase(key);
      throw;
    }
  }
  void* scratch = plan->workspace_bytes() > 0 ? workspace(plan->workspace_bytes()) : nullptr;
  plan->run(cublaslt(), alpha, a, b, beta, c, scratch, stream());
}

void CudaBackend::dense_product(DenseProduct which, Index rows, Index in, Index out, const float* a, const float* b,
                                float* c, const DenseEpilogue& epilogue) {
  dense_product_by_gemm(*this, which, rows, in, out, a, b, c, epilogue);
}

}  // namespace tower::backend::cuda
