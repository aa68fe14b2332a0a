#pragma once
// The CUDA backend of one GPU: cuDNN for convolutions and batch normalisation, cuBLASLt for GEMM, the shared
// functors of api/backend/math/ in grid-stride kernels for the rest, CUB for reductions. Internal (not
// installed). Every op is queued on the GPU's one stream (core/cuda/cuda_device.h) and returns without waiting.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/backend/backend.h"

namespace tower::backend::cuda {

class CudaBackend final : public Backend {
 public:
  // Requires GPU `index` to exist (throws std::invalid_argument naming it otherwise).
  explicit CudaBackend(int index);
  ~CudaBackend() override;
  Device device() const override { return Device::cuda(index_); }
  int index() const { return index_; }

  std::unique_ptr<Conv2DOp> make_conv2d(const Conv2DParams& p) override;            // cuda_conv2d.cpp
  std::unique_ptr<Pool2DOp> make_pool2d(const Pool2DParams& p) override;            // cuda_pool2d.cu
  std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormParams& p) override;  // cuda_batch_norm.cpp

  void gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, float alpha, const float* a, Index lda,
            const float* b, Index ldb, float beta, float* c, Index ldc) override;  // cuda_gemm.cpp
  void gemm_batched(bool trans_a, bool trans_b, Index batch, Index m, Index n, Index k, float alpha, const float* a,
                    Index lda, Index stride_a, const float* b, Index ldb, Index stride_b, float beta, float* c,
                    Index ldc, Index stride_c) override;  // cuda_gemm.cpp
  void dense_product(DenseProduct which, Index rows, Index in, Index out, const float* a, const float* b,
                     float* c, const DenseEpilogue& epilogue) override;  // cuda_gemm.cpp

  // cuda_elementwise.cu, except bias_grad and sum (cuda_reduce.cu)
  void fill(float* y, Index n, float value) override;
  void lstm_step_forward(const LstmStepForward& s, Index batch) override;
  void lstm_step_backward(const LstmStepBackward& s, Index batch) override;
  void gru_step_forward(const GruStepForward& s, Index batch) override;
  void gru_step_backward(const GruStepBackward& s, Index batch) override;
  void attention_forward(const AttentionParams& p, const float* q, const float* k, const float* v, float* out,
                         float* lse) override;  // cuda_attention.cu
  void attention_backward(const AttentionParams& p, const float* q, const float* k, const float* v, const float* out,
                          const float* lse, const float* dout, float* dq, float* dk, float* dv,
                          float* dbias) override;
  void fill_bytes(void* y, std::size_t bytes, unsigned char value) override;
  void add(const float* a, const float* b, float* y, Index n) override;
  void sub(const float* a, const float* b, float* y, Index n) override;
  void mul(const float* a, const float* b, float* y, Index n) override;
  void broadcast_binary(BinaryOp op, const float* a, const float* b, float* y, const Broadcast& s) override;
  void broadcast_reduce(const float* dy, float* dx, const Broadcast& s) override;
  void unary(UnaryOp op, const float* x, float* y, Index n) override;
  void axpby(float alpha, const float* x, float beta, float* y, Index n) override;
  void scale_shift(const float* x, float scale, float shift, float* y, Index n) override;
  void add_bias(float* y, const float* bias, Index rows, Index cols) override;
  void bias_grad(const float* dy, float* db, Index rows, Index cols) override;  // cuda_reduce.cu
  void activation_forward(ActivationKind kind, const ActivationParams& p, const float* x, float* y,
                          Index n) override;
  void activation_backward(ActivationKind kind, const ActivationParams& p, const float* x, const float* y,
                           const float* dy, float* dx, Index n) override;
  void softmax_forward(const float* x, float* y, Index outer, Index axis, Index inner) override;
  void softmax_backward(const float* y, const float* dy, float* dx, Index outer, Index axis,
                        Index inner) override;
  void lrn_forward(const LrnParams& p, const float* x, float* y, Index positions, Index depth) override;
  void lrn_backward(const LrnParams& p, const float* x, const float* y, const float* dy, float* dx, Index positions,
                    Index depth) override;
  void dropout_mask(float* mask, Index n, float rate, const std::uint64_t* seed) override;
  void transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) override;
  void copy_strided(const float* src, Index src_inner, float* dst, Index dst_inner, Index dst_offset,
                    Index outer) override;
  void copy_strided_back(const float* src, Index src_inner, Index src_offset, float* dst, Index dst_inner,
                         Index outer) override;
  void pad2d(const float* x, float* y, Index n, Index h, Index w, Index c, Index out_h, Index out_w, Index top,
             Index left) override;
  void pad2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, Index out_h, Index out_w,
                      Index top, Index left) override;
  void upsample2d(const float* x, float* y, Index n, Index h, Index w, Index c, int fh, int fw) override;
  void upsample2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, int fh,
                           int fw) override;
  void global_pool(PoolKind kind, const float* x, float* y, Index n, Index positions, Index c) override;
  void global_pool_backward(PoolKind kind, const float* x, const float* y, const float* dy, float* dx, Index n,
                            Index positions, Index c) override;
  void sum(const float* x, float* y, Index n) override;  // cuda_reduce.cu
  void select(const float* cond, const float* a, const float* b, float* y, Index n) override;
  // cuda_indexing.cu
  void strided_copy(const float* x, float* y, const StridedCopy& s) override;
  void take(AnyValues indices, Index count, const float* x, float* y, Index outer, Index n, Index inner) override;
  void take_backward(AnyValues indices, Index count, const float* dy, float* dx, Index outer, Index n,
                     Index inner) override;
  void find_invalid_index(AnyValues indices, Index count, Index n, std::int64_t* first) override;
  void cumsum(const float* x, float* y, Index outer, Index n, Index inner, bool reverse) override;
  void reduce_extreme(bool max, const float* x, float* y, std::int32_t* arg, Index outer, Index n,
                      Index inner) override;
  void cast(AnyValues x, Index n, DType to, void* y) override;
  // cuda_graph.cpp: stream capture in relaxed mode (cudaMalloc stays allowed), the allocator's private pool open
  // meanwhile.
  bool begin_capture() override;
  std::unique_ptr<StepGraph> end_capture() override;

  // The GPU's stream; makes the GPU current on the calling thread first.
  cudaStream_t stream() const;
  // Library handles bound to stream(), created on first use.
  cudnnHandle_t cudnn();         // cuda_conv2d.cpp
  cublasLtHandle_t cublaslt();   // cuda_gemm.cpp
  // Scratch memory on this GPU of at least `bytes`, kept and grown by the backend (cuDNN and cuBLASLt
  // workspaces, CUB temporary storage). Valid until the next call; ops on the one stream never overlap. A
  // captured graph keeps the address it was captured with, so while graphs live (or a capture is under way) an
  // outgrown block is kept, not freed, until the last graph is gone.
  void* workspace(std::size_t bytes);

  // cuda_optimizers.cu
  void apply_update(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) override;
  void accumulate_gradients(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) override;
  void clip_gradients(const GradientClip& clip, std::span<const ClipTensors> tensors, float* scratch) override;

 private:
  int index_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::vector<std::pair<void*, std::size_t>> retired_workspaces_;  // outgrown while graphs lived

  // Step capture (cuda_graph.cpp).
  class CudaStepGraph;
  void graph_destroyed();
  void capture_failed(const std::string& why);
  int capture_pool_ = 0;  // the allocator's private pool while a capture is under way
  int live_graphs_ = 0;
  bool capture_failure_logged_ = false;

  // GEMM plans (cuda_gemm.cpp): per shape and operand alignment, the cuBLASLt descriptors and the algorithm its
  // heuristic chose. The deleter is defined there too, so destroying the backend frees them without this header
  // knowing the type.
  struct GemmPlans;
  struct GemmPlansDeleter {
    void operator()(GemmPlans* plans) const;
  };
  std::unique_ptr<GemmPlans, GemmPlansDeleter> gemm_plans_;

 public:
  // losses and metrics: cuda_losses.cu
  void loss_forward(const LossParams& p, AnyValues y_true, const float* y_pred, float* per_example, Index rows,
                    Index cols) override;
  void loss_backward(const LossParams& p, AnyValues y_true, const float* y_pred, const float* scale, float* grad,
                     Index rows, Index cols) override;
  void loss_backward_through_softmax(const LossParams& p, AnyValues y_true, const float* probs, const float* scale,
                                     float* grad_logits, Index rows, Index cols) override;
  void find_invalid_class(AnyValues labels, Index n, Index classes, double ignore_class,
                          std::int64_t* first) override;
  void example_weights(const ExampleWeightParams& p, double* weights) override;
  void loss_scale(const double* weights, Index n, Index per, double k, float* scale) override;
  void masked_loss_weights(const double* weights, Index per, const float* mask, Index n, double* out) override;
  void masked_metric_weights(const float* weights, Index per, const float* mask, Index n, float* out) override;
  void accumulate_weighted_sum(const float* x, const double* weights, Index n, Index per, double factor,
                               double* total) override;
  void accumulate_penalty(const float* w, Index n, double l1, double l2, double factor, double* total) override;
  void add_penalty_gradient(const float* w, float* grad, Index n, double l1, double l2) override;
  void update_mean_metric(const MeanMetricParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                          double* state) override;
  void update_threshold_counts(const ThresholdCountParams& p, AnyValues y_true, AnyValues y_pred,
                               AnyValues sample_weight, double* state) override;
  void update_auc(const AucParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                  double* state) override;
  void update_column_sums(const ColumnSumsParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                          double* state) override;
  void update_confusion_matrix(const ConfusionMatrixParams& p, AnyValues y_true, AnyValues y_pred,
                               AnyValues sample_weight, double* state) override;
  void add_doubles(const double* x, double* y, Index n) override;
  void add_to_doubles(double* y, Index n, double value) override;
  // synchronized batch normalization (cuda_sync_batch_norm.cu)
  void batch_norm_sums(const float* x, Index rows, Index channels, double* sums) override;
  void batch_norm_statistics(const double* sums, Index channels, float* mean, float* variance) override;
  void batch_norm_grad_sums(const float* x, const float* dy, const float* mean, const float* variance, float epsilon,
                            Index rows, Index channels, double* sums, float* dgamma, float* dbeta) override;
  void batch_norm_sync_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                          const float* variance, float epsilon, const double* grad_sums, const double* count,
                          Index rows, Index channels, float* dx) override;
};

// The backend of GPU `index`, made on first use (backend::get routes cuda:N here).
CudaBackend& backend(int index);

// Throws std::runtime_error("<op> <shapes>: <library> error <message>") for a failed call.
// TOWER_ALLOW_TF32: "0" keeps FP32 convolutions and matmuls off TF32 tensor cores (the parity tests run so),
// "1" allows both; unset, PyTorch's defaults: convolutions may use TF32 (cudnn.allow_tf32), matmuls may not
// (cuda.matmul.allow_tf32). Read once; any other value throws std::invalid_argument naming the variable.
bool tf32_allowed();
bool tf32_allowed_in_matmuls();
void check_cuda(cudaError_t status, const std::string& op);
void check_cudnn(cudnnStatus_t status, const std::string& op);
void check_cublas(cublasStatus_t status, const std::string& op);

}  // namespace tower::backend::cuda
