// CUDA runtime queries. Built only with CUDA; no public header includes a CUDA header.
#include <cuda_runtime_api.h>

namespace tower::backend::cuda {

int device_count() {
  int n = 0;
  // No driver or no device is an answer (zero GPUs), not an error.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace tower::backend::cuda
