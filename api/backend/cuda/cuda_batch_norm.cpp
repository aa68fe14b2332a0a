#include <climits>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/cuda/cudnn_descriptors.h"
#include "api/core/allocator.h"

namespace tower::backend::cuda {

// inv_std = 1 / sqrt(variance + epsilon) over `channels` values, queued on `stream` (cuda_batch_norm.cu).
void batch_norm_inverse_std(const float* variance, float epsilon, float* inv_std, Index channels, cudaStream_t stream);

namespace {

std::string describe(const BatchNormParams& p) {
  return Shape{p.rows, p.channels}.to_string() + ", epsilon " + std::to_string(p.epsilon);
}

// Batch normalisation over the rows of [rows, channels], described to cuDNN as the NHWC image [rows, 1, 1,
// channels] (the same memory) so that it normalises each channel over the rows (CUDNN_BATCHNORM_SPATIAL).
// Training and backward use the persistent variant where cuDNN supports it, as PyTorch does for channels-last
// images.
//
// The statistics. The interface wants the batch mean and the biased variance, and backward takes them back.
// cuDNN's training forward reports the batch statistics through its running averages: with exponential average
// factor 1 the running mean is the batch mean and the running variance the batch's unbiased variance
// (Bessel-corrected, as PyTorch's running_var, which cuDNN updates directly). The op zeroes both outputs first
// (factor 1 still multiplies the old value, by 0, and 0 * NaN would be NaN) and scales the variance by
// (rows - 1) / rows, which gives the biased variance to a few float roundings at any magnitude; recovering it
// from cuDNN's saved 1 / sqrt(var + eps) instead would lose it to cancellation where var is small beside eps.
// A single row, which has no unbiased variance, is its own mean with variance 0, normalised by the inference
// forward. Backward hands cuDNN the given mean and 1 / sqrt(variance + eps), computed by a small kernel into
// scratch the op owns.
class CudaBatchNorm final : public BatchNormOp {
 public:
  CudaBatchNorm(CudaBackend& backend, const BatchNormParams& p) : backend_(backend), p_(p), what_(describe(p)) {
    if (p.rows == 0) return;
    check(cudnnSetTensor4dDescriptor(x_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, static_cast<int>(p.rows),
                                     static_cast<int>(p.channels), 1, 1),
          "describing x");
    check(cudnnDeriveBNTensorDescriptor(channel_.get(), x_.get(), CUDNN_BATCHNORM_SPATIAL),
          "describing the per-channel tensors");
    allocator_ = &allocator_for(backend.device());
    inv_std_ = static_cast<float*>(allocator_->allocate(channel_bytes()));
  }
  ~CudaBatchNorm() override {
    if (inv_std_) allocator_->deallocate(inv_std_, channel_bytes());
  }
  CudaBatchNorm(const CudaBatchNorm&) = delete;
  CudaBatchNorm& operator=(const CudaBatchNorm&) = delete;

  void forward_training(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* variance) override {
    zero(mean, "forward training: zeroing the mean");
    zero(variance, "forward training: zeroing the variance");
    if (p_.rows == 0) return;  // no examples: no statistics
    if (p_.rows == 1) {        // its own mean and a variance of 0, where cuDNN's unbiased variance would divide by 0
      check_cuda(cudaMemcpyAsync(mean, x, channel_bytes(), cudaMemcpyDeviceToDevice, backend_.stream()),
                 "BatchNormalization forward training: the mean of one row " + what_);
      forward_inference(x, gamma, beta, mean, variance, y);
      return;
    }
    const float one = 1.f, none = 0.f;
    run_training_mode(
        [&](cudnnBatchNormMode_t mode) {
          return cudnnBatchNormalizationForwardTraining(backend_.cudnn(), mode, &one, &none, x_.get(), x, x_.get(), y,
                                                        channel_.get(), gamma, beta, 1.0, mean, variance, p_.epsilon,
                                                        nullptr, nullptr);
        },
        "forward training");
    const float biased = static_cast<float>(static_cast<double>(p_.rows - 1) / static_cast<double>(p_.rows));
    check(cudnnScaleTensor(backend_.cudnn(), channel_.get(), variance, &biased),
          "forward training: the biased variance");
  }

  void forward_inference(const float* x, const float* gamma, const float* beta, const float* mean,
                         const float* variance, float* y) override {
    if (p_.rows == 0) return;
    const float one = 1.f, none = 0.f;
    check(cudnnBatchNormalizationForwardInference(backend_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &none, x_.get(), x,
                                                  x_.get(), y, channel_.get(), gamma, beta, mean, variance, p_.epsilon),
          "forward inference");
  }

  void backward(const float* x, const float* dy, const float* gamma, const float* mean, const float* variance,
                float* dx, float* dgamma, float* dbeta) override {
    if (p_.rows == 0) {
      zero(dgamma, "backward: zeroing dgamma");
      zero(dbeta, "backward: zeroing dbeta");
      return;
    }
    batch_norm_inverse_std(variance, p_.epsilon, inv_std_, p_.channels, backend_.stream());
    const float one = 1.f, none = 0.f;
    run_training_mode(
        [&](cudnnBatchNormMode_t mode) {
          return cudnnBatchNormalizationBackward(backend_.cudnn(), mode, &one, &none, &one, &none, x_.get(), x,
                                                 x_.get(), dy, x_.get(), dx, channel_.get(), gamma, dgamma, dbeta,
                                                 p_.epsilon, mean, inv_std_);
        },
        "backward");
  }

 private:
  std::size_t channel_bytes() const { return static_cast<std::size_t>(p_.channels) * sizeof(float); }
  void check(cudnnStatus_t status, const std::string& step) const {
    check_cudnn(status, "BatchNormalization " + step + " " + what_);
  }
  // Runs call(training_mode_); should cuDNN not support the persistent variant for this shape, it switches this op
  // to the plain one, which is supported wherever batch normalisation is, and runs call again.
  template <class Call>
  void run_training_mode(const Call& call, const std::string& step) {
    cudnnStatus_t status = call(training_mode_);
    if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED &&
        training_mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
      training_mode_ = CUDNN_BATCHNORM_SPATIAL;
      status = call(training_mode_);
    }
    check(status, step);
  }
  void zero(float* channel_values, const std::string& step) {
    check_cuda(cudaMemsetAsync(channel_values, 0, channel_bytes(), backend_.stream()),
               "BatchNormalization " + step + " " + what_);
  }

  CudaBackend& backend_;
  BatchNormParams p_;
  std::string what_;
  TensorDescriptor x_, channel_;
  cudnnBatchNormMode_t training_mode_ = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  Allocator* allocator_ = nullptr;
  float* inv_std_ = nullptr;
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
