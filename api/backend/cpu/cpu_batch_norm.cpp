#include "api/backend/cpu/cpu_backend.h"

#include <stdexcept>

namespace tower::backend::cpu {

// Replaced by the oneDNN batch normalization.
std::unique_ptr<BatchNormOp> CpuBackend::make_batch_norm(const BatchNormParams&) {
  throw std::logic_error("CPU batch normalization is not built yet");
}

}  // namespace tower::backend::cpu
