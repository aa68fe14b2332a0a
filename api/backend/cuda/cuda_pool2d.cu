#include <memory>
#include <stdexcept>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/pooling.h"
#include "api/core/allocator.h"

namespace tower::backend::cuda {

namespace {

// Max pooling keeps the flat input index of each window's maximum from a training forward (argmax, owned by the
// op); both backwards gather over the windows covering each input element (math/pooling.h).
class CudaPool2D final : public Pool2DOp {
 public:
  CudaPool2D(CudaBackend& backend, const Pool2DParams& p)
      : backend_(backend),
        p_(p),
        x_size_(p.batch * p.in_h * p.in_w * p.channels),
        y_size_(p.batch * p.out_h * p.out_w * p.channels),
        forward_name_(math::describe_pool2d(p) + " forward"),
        backward_name_(math::describe_pool2d(p) + " backward") {
    if (p.kind == PoolKind::max && y_size_ > 0) {
      allocator_ = &allocator_for(backend.device());
      argmax_ = static_cast<Index*>(allocator_->allocate(argmax_bytes()));
    }
  }
  ~CudaPool2D() override {
    // The caching allocator hands the block on in stream order, after any queued backward has read it.
    if (argmax_) allocator_->deallocate(argmax_, argmax_bytes());
  }
  CudaPool2D(const CudaPool2D&) = delete;
  CudaPool2D& operator=(const CudaPool2D&) = delete;

  void forward(const float* x, float* y, bool training) override {
    if (training) has_argmax_ = true;
    if (p_.kind == PoolKind::max)
      for_each(y_size_, math::MaxPool2D{p_, x, y, training ? argmax_ : nullptr}, backend_.stream(),
               forward_name_.c_str());
    else
      for_each(y_size_, math::AveragePool2D{p_, x, y}, backend_.stream(), forward_name_.c_str());
  }

  void backward(const float* dy, float* dx) override {
    if (p_.kind == PoolKind::average) {
      for_each(x_size_, math::AveragePool2DBackward{p_, dy, dx}, backend_.stream(), backward_name_.c_str());
      return;
    }
    if (!has_argmax_) throw std::logic_error(backward_name_ + " needs a preceding forward with training = true");
    for_each(x_size_, math::MaxPool2DBackward{p_, dy, argmax_, dx}, backend_.stream(), backward_name_.c_str());
  }

 private:
  std::size_t argmax_bytes() const { return static_cast<std::size_t>(y_size_) * sizeof(Index); }

  CudaBackend& backend_;
  Pool2DParams p_;
  Index x_size_, y_size_;
  std::string forward_name_, backward_name_;
  Allocator* allocator_ = nullptr;
  Index* argmax_ = nullptr;
  bool has_argmax_ = false;
};

}  // namespace

std::unique_ptr<Pool2DOp> CudaBackend::make_pool2d(const Pool2DParams& p) {
  if (!math::pool2d_params_valid(p))
    throw std::invalid_argument("inconsistent pooling parameters: " + math::describe_pool2d(p));
  return std::make_unique<CudaPool2D>(*this, p);
}

}  // namespace tower::backend::cuda
