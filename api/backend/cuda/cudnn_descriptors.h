#pragma once
// Owning handles for the cuDNN descriptors the CUDA backend's library ops keep (convolution, batch normalisation).
// Internal, host code.
#include <cudnn.h>

#include "api/backend/cuda/cuda_backend.h"

namespace tower::backend::cuda {

// Creates the descriptor on construction (throwing on failure) and destroys it with the object.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { check_cudnn(Create(&descriptor_), "creating a cuDNN descriptor"); }
  ~CudnnDescriptor() { Destroy(descriptor_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  T get() const { return descriptor_; }

 private:
  T descriptor_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using ActivationDescriptor =
    CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;

}  // namespace tower::backend::cuda
