#include "api/backend/cpu/cpu_backend.h"

#include <stdexcept>

namespace tower::backend::cpu {

// Replaced by the oneDNN pooling.
std::unique_ptr<Pool2DOp> CpuBackend::make_pool2d(const Pool2DParams&) {
  throw std::logic_error("CPU pooling is not built yet");
}

}  // namespace tower::backend::cpu
