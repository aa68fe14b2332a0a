#include "api/backend/cuda/cuda_backend.h"

#include <array>
#include <memory>
#include <mutex>
#include <type_traits>

#include "api/core/allocator.h"
#include "api/core/cuda/cuda_device.h"

namespace tower::backend::cuda {

// Every op of Backend is defined for the GPU: a missing one would leave this class abstract.
static_assert(!std::is_abstract_v<CudaBackend>, "CudaBackend must implement every Backend op");

CudaBackend::CudaBackend(int index) : index_(index) { tower::cuda::require_device(index); }

CudaBackend::~CudaBackend() {
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublaslt_) cublasLtDestroy(cublaslt_);
  if (workspace_) allocator_for(device()).deallocate(workspace_, workspace_bytes_);
  for (const auto& [block, bytes] : retired_workspaces_) allocator_for(device()).deallocate(block, bytes);
}

CudaBackend& backend(int index) {
  tower::cuda::require_device(index);
  // Never destroyed: at exit the driver, the allocators and the streams may already be gone.
  static auto* backends = new std::array<std::unique_ptr<CudaBackend>, 64>();
  static auto* made = new std::array<std::once_flag, 64>();
  const auto i = static_cast<std::size_t>(index);
  std::call_once((*made)[i], [&] { (*backends)[i] = std::make_unique<CudaBackend>(index); });
  return *(*backends)[i];
}

}  // namespace tower::backend::cuda
