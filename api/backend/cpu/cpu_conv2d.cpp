#include "api/backend/cpu/cpu_backend.h"

#include <stdexcept>

namespace tower::backend::cpu {

// Replaced by the oneDNN convolution.
std::unique_ptr<Conv2DOp> CpuBackend::make_conv2d(const Conv2DParams&) {
  throw std::logic_error("CPU convolution is not built yet");
}

}  // namespace tower::backend::cpu
