#include <climits>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/core/alignment.h"
#include "api/core/allocator.h"

namespace tower::backend::cuda {

// The kernels, in cuda_batch_norm.cu.
std::size_t batch_norm_partial_bytes(Index rows, Index channels);
void batch_norm_training_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                 float* variance, float epsilon, Index rows, Index channels, double* partial,
                                 double* sums, float* scale, cudaStream_t stream, const std::string& op);
void batch_norm_inference_forward(const float* x, const float* gamma, const float* beta, const float* mean,
                                  const float* variance, float* y, float epsilon, Index rows, Index channels,
                                  float* scale, cudaStream_t stream, const std::string& op);
void batch_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float epsilon, Index rows, Index channels, float* dx, float* dgamma,
                         float* dbeta, double* partial, double* sums, float* factors, cudaStream_t stream,
                         const std::string& op);

namespace {

std::string describe(const BatchNormParams& p) {
  return Shape{p.rows, p.channels}.to_string() + ", epsilon " + std::to_string(p.epsilon);
}

// Batch normalisation over the rows of [rows, channels] (an NHWC image's pixels are its rows), on Tower's own
// kernels (cuda_batch_norm.cu): the per-channel sums in double and in a fixed order, then one element-wise pass
// (math/batch_norm.h). cuDNN's batch normalisation, given this memory as [rows, 1, 1, channels], ran a kernel that
// took two thirds of a MobileNetV2 training step on an H200.
//
// Forward training: sums of x and x^2, the mean and the biased variance from them (math::MomentsFromSums, as
// SyncBatchNormalization's), then y = (x - mean) * gamma / sqrt(variance + epsilon) + beta. Backward: sums of dy and
// dy * x_hat, then dx = gamma * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)). The op owns its per-channel
// scratch (the sums and the factors); the partial sums use the backend's workspace.
class CudaBatchNorm final : public BatchNormOp {
 public:
  CudaBatchNorm(CudaBackend& backend, const BatchNormParams& p) : backend_(backend), p_(p), what_(describe(p)) {
    if (p.rows == 0) return;
    allocator_ = &allocator_for(backend.device());
    scratch_ = allocator_->allocate(scratch_bytes());
  }
  ~CudaBatchNorm() override {
    if (scratch_) allocator_->deallocate(scratch_, scratch_bytes());
  }
  CudaBatchNorm(const CudaBatchNorm&) = delete;
  CudaBatchNorm& operator=(const CudaBatchNorm&) = delete;

  void forward_training(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* variance) override {
    if (p_.rows == 0) {  // no examples: no statistics
      zero(mean, "forward training: zeroing the mean");
      zero(variance, "forward training: zeroing the variance");
      return;
    }
    batch_norm_training_forward(x, gamma, beta, y, mean, variance, p_.epsilon, p_.rows, p_.channels, partial(),
                                sums(), factors(), backend_.stream(), "BatchNormalization forward training " + what_);
  }

  void forward_inference(const float* x, const float* gamma, const float* beta, const float* mean,
                         const float* variance, float* y) override {
    if (p_.rows == 0) return;
    batch_norm_inference_forward(x, gamma, beta, mean, variance, y, p_.epsilon, p_.rows, p_.channels, factors(),
                                 backend_.stream(), "BatchNormalization forward inference " + what_);
  }

  void backward(const float* x, const float* dy, const float* gamma, const float* mean, const float* variance,
                float* dx, float* dgamma, float* dbeta) override {
    if (p_.rows == 0) {
      zero(dgamma, "backward: zeroing dgamma");
      zero(dbeta, "backward: zeroing dbeta");
      return;
    }
    batch_norm_backward(x, dy, gamma, mean, variance, p_.epsilon, p_.rows, p_.channels, dx, dgamma, dbeta, partial(),
                        sums(), factors(), backend_.stream(), "BatchNormalization backward " + what_);
  }

 private:
  // [sums: 2 * channels + 1 doubles | factors: 3 * channels floats], the factors 256-byte aligned as every buffer
  // (core/alignment.h), so that the element passes may read them four channels at a time.
  std::size_t sums_bytes() const {
    return align_bytes(static_cast<std::size_t>(2 * p_.channels + 1) * sizeof(double));
  }
  std::size_t scratch_bytes() const {
    return sums_bytes() + static_cast<std::size_t>(3 * p_.channels) * sizeof(float);
  }
  double* sums() const { return static_cast<double*>(scratch_); }
  float* factors() const { return reinterpret_cast<float*>(static_cast<char*>(scratch_) + sums_bytes()); }
  double* partial() { return static_cast<double*>(backend_.workspace(batch_norm_partial_bytes(p_.rows, p_.channels))); }
  void zero(float* channel_values, const std::string& step) {
    check_cuda(cudaMemsetAsync(channel_values, 0, static_cast<std::size_t>(p_.channels) * sizeof(float),
                               backend_.stream()),
               "BatchNormalization " + step + " " + what_);
  }

  CudaBackend& backend_;
  BatchNormParams p_;
  std::string what_;
  Allocator* allocator_ = nullptr;
  void* scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<BatchNormOp> CudaBackend::make_batch_norm(const BatchNormParams& p) {
  if (p.rows < 0 || p.channels <= 0 || !(p.epsilon >= 0.f) || p.rows > INT_MAX || p.channels > INT_MAX)
    throw std::invalid_argument(
        "batch normalization: rows must be in [0, 2^31), channels in (0, 2^31) and epsilon "
        ">= 0, got " +
        describe(p));
  return std::make_unique<CudaBatchNorm>(*this, p);
}

}  // namespace tower::backend::cuda
