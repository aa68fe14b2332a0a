#include <cstdlib>
#include <stdexcept>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/core/cuda/cuda_device.h"

namespace tower::backend::cuda {

namespace {
// -1: unset (PyTorch's defaults), 0: off, 1: on.
int tf32_setting() {
  static const int setting = [] {
    const char* v = std::getenv("TOWER_ALLOW_TF32");
    if (!v) return -1;
    const std::string s(v);
    if (s == "0") return 0;
    if (s == "1") return 1;
    throw std::invalid_argument("TOWER_ALLOW_TF32 must be 0 or 1, got \"" + s + "\"");
  }();
  return setting;
}
}  // namespace

bool tf32_allowed() { return tf32_setting() != 0; }
bool tf32_allowed_in_matmuls() { return tf32_setting() == 1; }

void check_cuda(cudaError_t status, const std::string& op) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw std::runtime_error(op + ": CUDA error " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

void check_cudnn(cudnnStatus_t status, const std::string& op) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  throw std::runtime_error(op + ": cuDNN error " + cudnnGetErrorString(status) +
                           (detail[0] ? std::string(" (") + detail + ")" : std::string()));
}

void check_cublas(cublasStatus_t status, const std::string& op) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(op + ": cuBLAS error " + cublasLtGetStatusName(status) + ": " +
                           cublasLtGetStatusString(status));
}

cudaStream_t CudaBackend::stream() const {
  tower::cuda::set_device(index_);
  return static_cast<cudaStream_t>(tower::cuda::stream(index_));
}

void* CudaBackend::workspace(std::size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  Allocator& allocator = allocator_for(device());
  if (workspace_ && (live_graphs_ > 0 || capture_pool_)) retired_workspaces_.emplace_back(workspace_, workspace_bytes_);
  else if (workspace_) allocator.deallocate(workspace_, workspace_bytes_);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  // Grown by half again, so a run of slightly larger requests does not reallocate each time.
  const std::size_t size = bytes + bytes / 2;
  workspace_ = allocator.allocate(size);
  workspace_bytes_ = size;
  return workspace_;
}

}  // namespace tower::backend::cuda
