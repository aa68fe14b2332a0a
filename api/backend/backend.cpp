#include "api/backend/backend.h"

#include <stdexcept>
#include <string>

#include "api/backend/cpu/cpu_backend.h"
#ifdef TOWER_WITH_CUDA
#include "api/backend/cuda/cuda_backend.h"
#endif

namespace tower::backend {

Backend& get(Device device) {
  if (device.is_cpu()) {
    static cpu::CpuBackend cpu_backend;
    return cpu_backend;
  }
#ifdef TOWER_WITH_CUDA
  return cuda::backend(device.index);
#else
  throw std::invalid_argument("no backend for device " + device.to_string() +
                              ": this build of Tower has no CUDA backend");
#endif
}

}  // namespace tower::backend
